package jobs

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/schedule"
	"scheduler/internal/testenv"
)

// t0 is a round instant the tests start from.
var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

const token = int64(7)

// harness runs a Runner over a fake clock and a fake ledger.
type harness struct {
	t      *testing.T
	clock  *fakeClock
	ledger *fakeLedger
	runner *Runner
	paused atomic.Bool
	term   *leading
}

func mustSchedule(tb testing.TB, spec string) *schedule.Schedule {
	tb.Helper()
	s, err := schedule.Parse(spec, time.UTC)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// spec returns a job that runs every minute with exec, overridden by mod.
func spec(tb testing.TB, name string, exec scheduler.Executor, mod func(*Spec)) Spec {
	s := Spec{Name: name, Schedule: mustSchedule(tb, "@every 1m"), Executor: exec, Timeout: time.Hour,
		RetryBackoff: 10 * time.Second, Overlap: OverlapSkip, Misfire: MisfireOnce, Catchup: time.Hour, Enabled: true}
	if mod != nil {
		mod(&s)
	}
	return s
}

// mustNew returns New(table, opts), with the test's logger unless opts has one.
func mustNew(tb testing.TB, table []Spec, opts Options) *Runner {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(tb)
	}
	r, err := New(table, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func newHarness(t *testing.T, now time.Time, table ...Spec) *harness {
	t.Helper()
	h := &harness{t: t, clock: newFakeClock(now), ledger: newFakeLedger()}
	r := mustNew(t, table, Options{Node: "n1", Ledger: h.ledger, Clock: h.clock,
		Paused: func(string) bool { return h.paused.Load() }})
	h.runner = r
	return h
}

// lead starts a term in the background.
func (h *harness) lead(tok int64) { h.term = leadAsync(h.t, h.runner, tok) }

// stop ends the term and returns what Lead returned.
func (h *harness) stop() error {
	if h.term == nil {
		return nil
	}
	return h.term.stop()
}

// leading is a term that Lead runs in the background.
type leading struct {
	tb     testing.TB
	cancel context.CancelFunc
	result chan error
	err    error
	over   bool // Lead returned, with err
}

// leadAsync runs r.Lead with tok in the background until stop, which the test's cleanup calls.
func leadAsync(tb testing.TB, r *Runner, tok int64) *leading {
	ctx, cancel := context.WithCancel(context.Background())
	l := &leading{tb: tb, cancel: cancel, result: make(chan error, 1)}
	go func() { l.result <- r.Lead(ctx, tok) }()
	tb.Cleanup(func() { _ = l.stop() })
	return l
}

// stop ends the term and returns what Lead returned.
func (l *leading) stop() error {
	l.cancel()
	return l.ended("Lead did not return after its context ended")
}

// stopped is stop for a deferred call: Lead must return nil.
func (l *leading) stopped() {
	if err := l.stop(); err != nil {
		l.tb.Errorf("Lead=%v", err)
	}
}

// ended waits for Lead to return and returns what it returned; the test fails with msg if it
// does not.
func (l *leading) ended(msg string) error {
	l.tb.Helper()
	if l.over {
		return l.err
	}
	select {
	case l.err = <-l.result:
		l.over = true
		return l.err
	case <-time.After(10 * time.Second):
		l.tb.Fatal(msg)
		return nil
	}
}

// returned reports whether Lead has returned, and what, without waiting.
func (l *leading) returned() (bool, error) {
	if !l.over {
		select {
		case l.err = <-l.result:
			l.over = true
		default:
		}
	}
	return l.over, l.err
}

// advance waits until want timers are armed (the runner is idle), then moves the clock.
func (h *harness) advance(d time.Duration, want int) {
	h.t.Helper()
	testenv.Eventually(h.t, 10*time.Second, time.Millisecond, "armed timers", func() bool { return h.clock.Pending() == want })
	h.clock.Advance(d)
}

func (h *harness) rows(job string) []ledgerRow { return h.ledger.snapshot(job) }

func (h *harness) waitRows(job string, what string, cond func([]ledgerRow) bool) []ledgerRow {
	h.t.Helper()
	var rows []ledgerRow
	testenv.Eventually(h.t, 10*time.Second, time.Millisecond, what, func() bool { rows = h.rows(job); return cond(rows) })
	return rows
}

func count(rows []ledgerRow, st scheduler.Status) int {
	n := 0
	for _, r := range rows {
		if r.Status == st {
			n++
		}
	}
	return n
}

func succeed(context.Context, scheduler.Attempt) (string, error) { return "ok", nil }

func TestRunner_FiresEachSlotOnce(t *testing.T) {
	exec := &attemptLog{}
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "beat", exec, nil))
	h.lead(token)
	for i := 0; i < 3; i++ {
		h.advance(time.Minute, 1)
		want := i + 1
		h.waitRows("beat", "run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == want })
	}
	for i, r := range exec.attempts() {
		if want := t0.Add(time.Duration(i+1) * time.Minute); !r.Slot.Equal(want) || r.Token != token || r.Attempt != 1 || r.Job != "beat" || r.RunID == "" {
			t.Errorf("run %d = %+v, want slot %s token %d attempt 1", i, r, want, token)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatalf("Lead returned %v after its context ended, want nil", err)
	}
}

func TestRunner_Catchup(t *testing.T) {
	// The last run was at 12:00; a leader takes over at 12:05:30, so 12:01-12:05 were missed.
	now := t0.Add(5*time.Minute + 30*time.Second)
	slot := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	cases := []struct {
		misfire Misfire
		catchup time.Duration
		ran     []int // minutes after 12:00 that run
		missed  []int
	}{
		{MisfireSkip, time.Hour, nil, []int{1, 2, 3, 4, 5}},
		{MisfireOnce, time.Hour, []int{5}, []int{1, 2, 3, 4}},
		{MisfireAll, time.Hour, []int{1, 2, 3, 4, 5}, nil},
		// Slots older than the window are missed whatever the policy.
		{MisfireAll, 150 * time.Second, []int{4, 5}, []int{1, 2, 3}},
	}
	for _, tc := range cases {
		t.Run(string(tc.misfire)+"/"+tc.catchup.String(), func(t *testing.T) {
			var mu sync.Mutex
			var order []time.Time
			exec := execFunc(func(_ context.Context, r scheduler.Attempt) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				order = append(order, r.Slot)
				return "", nil
			})
			h := newHarness(t, now, spec(t, "job", exec, func(s *Spec) { s.Misfire, s.Catchup = tc.misfire, tc.catchup }))
			h.ledger.put(scheduler.Run{Job: "job", ScheduledAt: slot(0), Status: scheduler.StatusSucceeded, Token: 3, Attempt: 1})
			h.lead(token)
			rows := h.waitRows("job", "catch-up", func(r []ledgerRow) bool {
				return count(r, scheduler.StatusSucceeded) == len(tc.ran)+1 && count(r, scheduler.StatusMissed) == len(tc.missed)
			})
			var ran, missed []int
			for _, r := range rows[1:] {
				m := int(r.ScheduledAt.Sub(t0) / time.Minute)
				switch r.Status {
				case scheduler.StatusSucceeded:
					ran = append(ran, m)
				case scheduler.StatusMissed:
					missed = append(missed, m)
				}
			}
			if !equalInts(ran, tc.ran) || !equalInts(missed, tc.missed) {
				t.Fatalf("ran %v missed %v, want ran %v missed %v", ran, missed, tc.ran, tc.missed)
			}
			mu.Lock()
			defer mu.Unlock()
			for i := 1; i < len(order); i++ {
				if !order[i].After(order[i-1]) {
					t.Fatalf("catch-up ran out of order: %v", order)
				}
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRunner_TakesOverOrphanedRun(t *testing.T) {
	var seen atomic.Value
	exec := execFunc(func(_ context.Context, r scheduler.Attempt) (string, error) { seen.Store(r); return "", nil })
	now := t0.Add(30 * time.Second)
	h := newHarness(t, now, spec(t, "invoices", exec, nil))
	// The old leader (token 5) claimed 12:00 and froze mid-run.
	h.ledger.put(scheduler.Run{Job: "invoices", ScheduledAt: t0, Status: scheduler.StatusRunning, Token: 5, Attempt: 1})
	h.lead(token)
	rows := h.waitRows("invoices", "takeover", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
	if len(rows) != 1 || rows[0].Token != token || rows[0].Attempt != 2 {
		t.Fatalf("rows=%+v, want the 12:00 run finished once under token %d, attempt 2", rows, token)
	}
	if r := seen.Load().(scheduler.Attempt); !r.Slot.Equal(t0) || r.Token != token || r.Attempt != 2 {
		t.Fatalf("job saw %+v", r)
	}
}

// blocker is an executor whose runs wait until released or cancelled.
type blocker struct {
	started chan scheduler.Attempt
	release chan struct{}
	ended   chan error
}

func newBlocker() *blocker {
	return &blocker{started: make(chan scheduler.Attempt, 16), release: make(chan struct{}), ended: make(chan error, 16)}
}

func (b *blocker) Execute(ctx context.Context, r scheduler.Attempt) (string, error) {
	b.started <- r
	select {
	case <-b.release:
		b.ended <- nil
		return "released", nil
	case <-ctx.Done():
		b.ended <- ctx.Err()
		return "", ctx.Err()
	}
}

func TestRunner_Overlap(t *testing.T) {
	for _, policy := range []Overlap{OverlapSkip, OverlapQueue, OverlapReplace, OverlapAllow} {
		t.Run(string(policy), func(t *testing.T) {
			b := newBlocker()
			h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", b, func(s *Spec) { s.Overlap = policy }))
			h.lead(token)
			h.advance(time.Minute, 1) // 12:01 fires
			first := <-b.started
			h.advance(time.Minute, 2) // 12:02 fires while 12:01 runs (the loop's timer and the attempt's)
			switch policy {
			case OverlapSkip:
				rows := h.waitRows("job", "skip", func(r []ledgerRow) bool { return count(r, scheduler.StatusSkipped) == 1 })
				if !rows[1].ScheduledAt.Equal(t0.Add(2*time.Minute)) || !strings.Contains(rows[1].Completion.Reason, "overlap") {
					t.Fatalf("rows=%+v", rows)
				}
				close(b.release)
			case OverlapQueue:
				close(b.release)
				second := <-b.started
				if !second.Slot.After(first.Slot) {
					t.Fatalf("queued run %v did not follow %v", second.Slot, first.Slot)
				}
				h.waitRows("job", "both", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 2 })
			case OverlapReplace:
				second := <-b.started
				if err := <-b.ended; !errors.Is(err, context.Canceled) {
					t.Fatalf("first run ended with %v, want cancelled", err)
				}
				close(b.release)
				rows := h.waitRows("job", "replace", func(r []ledgerRow) bool {
					return count(r, scheduler.StatusSucceeded) == 1 && count(r, scheduler.StatusFailed) == 1
				})
				if rows[0].Status != scheduler.StatusFailed || !second.Slot.Equal(rows[1].ScheduledAt) {
					t.Fatalf("rows=%+v", rows)
				}
			case OverlapAllow:
				<-b.started // both run at once
				close(b.release)
				h.waitRows("job", "both", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 2 })
			}
		})
	}
}

func TestRunner_Retries(t *testing.T) {
	var calls atomic.Int32
	exec := execFunc(func(_ context.Context, r scheduler.Attempt) (string, error) {
		if n := calls.Add(1); int(n) != r.Attempt {
			return "", scheduler.Permanent(errors.New("attempt number out of step"))
		}
		if r.Attempt < 3 {
			return "", errors.New("flaky")
		}
		return "done", nil
	})
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", exec, func(s *Spec) { s.Retries = 3 }))
	h.lead(token)
	h.advance(time.Minute, 1)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "first attempt", func() bool { return calls.Load() == 1 })
	// Backoff 10s, then 20s: the loop's timer plus the backoff timer are armed.
	h.advance(9*time.Second, 2)
	h.advance(time.Second, 2)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "second attempt", func() bool { return calls.Load() == 2 })
	h.advance(19*time.Second, 2)
	if calls.Load() != 2 {
		t.Fatal("third attempt before its backoff")
	}
	h.advance(time.Second, 2)
	rows := h.waitRows("job", "success", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
	if rows[0].Attempt != 3 {
		t.Fatalf("attempt=%d, want 3", rows[0].Attempt)
	}

	t.Run("PermanentErrorIsNotRetried", func(t *testing.T) {
		var n atomic.Int32
		exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) {
			n.Add(1)
			return "", scheduler.Permanent(errors.New("no such file"))
		})
		h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", exec, func(s *Spec) { s.Retries = 5 }))
		h.lead(token)
		h.advance(time.Minute, 1)
		rows := h.waitRows("job", "failure", func(r []ledgerRow) bool { return count(r, scheduler.StatusFailed) == 1 })
		if n.Load() != 1 || !strings.Contains(rows[0].Completion.Error, "no such file") {
			t.Fatalf("calls=%d rows=%+v", n.Load(), rows)
		}
	})
}

func TestRunner_Timeout(t *testing.T) {
	b := newBlocker()
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", b, func(s *Spec) { s.Timeout = 5 * time.Minute }))
	h.lead(token)
	h.advance(time.Minute, 1)
	<-b.started
	h.advance(5*time.Minute, 2) // the attempt's timeout (12:06) comes before... the loop's timer fired at 12:02 too
	rows := h.waitRows("job", "timeout", func(r []ledgerRow) bool { return count(r, scheduler.StatusFailed) >= 1 })
	if !strings.Contains(rows[0].Completion.Error, "timed out after 5m0s") {
		t.Fatalf("error=%q", rows[0].Completion.Error)
	}
}

func TestRunner_Jitter(t *testing.T) {
	const window = 30 * time.Second
	slot := t0.Add(time.Minute)
	delay := schedule.Jitter("job", slot, window)
	if delay <= 0 || delay >= window {
		t.Fatalf("jitter %s outside (0, %s): pick another job name for this test", delay, window)
	}
	var started atomic.Value
	exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) { return "", nil })
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", exec, func(s *Spec) { s.Jitter = window }))
	h.runner.opts.Hooks.Fired = func(job string, d time.Duration) { started.Store(d) }
	h.lead(token)
	h.advance(30*time.Second+delay-time.Millisecond, 1)
	h.advance(0, 1)
	if started.Load() != nil {
		t.Fatal("the slot fired before its jitter")
	}
	h.advance(time.Millisecond, 1)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "jittered fire", func() bool { return started.Load() != nil })
	if d := started.Load().(time.Duration); d != delay {
		t.Fatalf("fired %s after the slot, want the jitter %s", d, delay)
	}
}

func TestRunner_LeadershipLossCancelsRuns(t *testing.T) {
	b := newBlocker()
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", b, nil))
	h.lead(token)
	h.advance(time.Minute, 1)
	<-b.started
	if err := h.stop(); err != nil {
		t.Fatalf("Lead=%v, want nil", err)
	}
	if err := <-b.ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("run ended with %v, want cancelled", err)
	}
	// The run stays running: the next leader takes it over.
	if rows := h.rows("job"); len(rows) != 1 || rows[0].Status != scheduler.StatusRunning {
		t.Fatalf("rows=%+v, want the run left running", rows)
	}
}

// slowTakeover is a ledger whose reads of orphans last until their context ends.
type slowTakeover struct {
	*fakeLedger
	reading chan struct{}
}

func (l slowTakeover) Orphans(ctx context.Context, _ ...string) ([]scheduler.Run, error) {
	close(l.reading)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestRunner_TermEndedDuringTakeover: a term ended while its catch-up still reads the ledger
// ends without an error, like a term ended later; the read's cancellation is not a failure.
func TestRunner_TermEndedDuringTakeover(t *testing.T) {
	ledger := slowTakeover{fakeLedger: newFakeLedger(), reading: make(chan struct{})}
	r := mustNew(t, []Spec{spec(t, "job", execFunc(succeed), nil)}, Options{Node: "n1", Ledger: ledger,
		Clock: newFakeClock(t0.Add(30 * time.Second))})
	term := leadAsync(t, r, token)
	<-ledger.reading
	if err := term.stop(); err != nil {
		t.Fatalf("Lead=%v, want nil", err)
	}
}

func TestRunner_StepsDownWhenFenced(t *testing.T) {
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", execFunc(succeed), nil))
	h.lead(token)
	h.advance(time.Minute, 1)
	h.waitRows("job", "first run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
	h.ledger.raise("job", token+1) // a newer leader
	h.advance(time.Minute, 1)
	if err := h.term.ended("Lead did not step down after the store refused its token"); !errors.Is(err, scheduler.ErrFenced) {
		t.Fatalf("Lead=%v, want ErrFenced", err)
	}
	if rows := h.rows("job"); len(rows) != 1 {
		t.Fatalf("rows=%+v: the fenced claim must write nothing", rows)
	}
}

func TestRunner_Drain(t *testing.T) {
	b := newBlocker()
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", b, nil))
	h.lead(token)
	h.advance(time.Minute, 1)
	<-b.started
	grace, expire := context.WithCancel(context.Background())
	drained := make(chan struct{})
	go func() { h.runner.Drain(grace); close(drained) }()
	select {
	case <-drained:
		t.Fatal("Drain returned while a run was in its grace period")
	case <-time.After(20 * time.Millisecond):
	}
	expire()
	<-drained
	if err := <-b.ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("run ended with %v, want cancelled after the grace", err)
	}
	// No new slot fires after the drain, and the interrupted run is left for the next leader.
	h.clock.Advance(10 * time.Minute)
	if rows := h.rows("job"); len(rows) != 1 || rows[0].Status != scheduler.StatusRunning {
		t.Fatalf("rows=%+v", rows)
	}
}

func TestRunner_PausedSlotsAreSkipped(t *testing.T) {
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", execFunc(succeed), nil))
	h.paused.Store(true)
	h.lead(token)
	h.advance(time.Minute, 1)
	rows := h.waitRows("job", "skip", func(r []ledgerRow) bool { return len(r) == 1 })
	if rows[0].Status != scheduler.StatusSkipped || rows[0].Completion.Reason != "paused" {
		t.Fatalf("rows=%+v", rows)
	}
}

func TestRunner_Trigger(t *testing.T) {
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "yearly", execFunc(succeed), func(s *Spec) { s.Schedule = mustSchedule(t, "@yearly") }))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.runner.Trigger(ctx, "yearly", t0); !errors.Is(err, ErrNotLeading) {
		t.Fatalf("Trigger on a follower = %v, want ErrNotLeading", err)
	}
	h.lead(token)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "leading", func() bool { return h.clock.Pending() == 1 })
	if err := h.runner.Trigger(ctx, "yearly", t0); err != nil {
		t.Fatal(err)
	}
	rows := h.waitRows("yearly", "manual run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
	if !rows[0].Manual || rows[0].Token != token || !rows[0].ScheduledAt.Equal(t0) {
		t.Fatalf("rows=%+v", rows)
	}
	// The same request again (a re-delivered trigger) finds its slot in the ledger.
	if err := h.runner.Trigger(ctx, "yearly", t0); err != nil {
		t.Fatal(err)
	}
	if rows := h.rows("yearly"); len(rows) != 1 {
		t.Fatalf("a repeated trigger ran again: %+v", rows)
	}
	if err := h.runner.Trigger(ctx, "nope", t0); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("Trigger of an unknown job = %v, want ErrUnknownJob", err)
	}
}

func TestRunner_SetTable(t *testing.T) {
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "a", execFunc(succeed), nil))
	h.lead(token)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "leading", func() bool { return h.clock.Pending() == 1 })
	err := h.runner.SetTable([]Spec{spec(t, "b", execFunc(succeed), func(s *Spec) { s.Schedule = mustSchedule(t, "@every 30s") })})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "reload", func() bool { h.ledger.mu.Lock(); defer h.ledger.mu.Unlock(); return h.ledger.fences["b"] == token })
	h.advance(30*time.Second, 1)
	h.waitRows("b", "new job runs", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
	h.advance(30*time.Second, 1)
	h.waitRows("b", "new job runs again", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 2 })
	if rows := h.rows("a"); len(rows) != 0 {
		t.Fatalf("removed job a ran: %+v", rows)
	}
	if err := h.runner.SetTable([]Spec{spec(t, "x", nil, nil)}); err == nil {
		t.Fatal("SetTable accepted a job without executor")
	}
}

// TestRunner_ReloadWhileRunStarts: a reload that the loop applies right after it launched a run
// (here in the same step, as when the run's goroutine is slow to start) replaces the job's spec
// while the goroutine starts; the goroutine must run the spec it was launched with, which -race
// checks.
func TestRunner_ReloadWhileRunStarts(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	block := execFunc(func(ctx context.Context, _ scheduler.Attempt) (string, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "ok", nil
	})
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", block, nil))
	h.lead(token)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "leading", func() bool { return h.clock.Pending() == 1 })
	changed, err := checkTable([]Spec{spec(t, "job", block, func(s *Spec) { s.Retries = 3 })})
	if err != nil {
		t.Fatal(err)
	}
	h.runner.mu.Lock()
	term := h.runner.current
	h.runner.mu.Unlock()
	errc := make(chan error, 1)
	if !term.send(context.Background(), func() {
		errc <- term.trigger("job", t0)
		term.reload(changed)
	}) {
		t.Fatal("the term ended")
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	unblock()
	h.waitRows("job", "the manual run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
}

// A trigger sent right after Begin, before the term's loop has started (or its takeover has
// raised a fence), reaches the term and runs: the daemon hands the term the triggers that
// waited while no replica led at that moment, and one that met no term was lost until the next.
func TestRunner_CommandAfterBeginReachesTheTerm(t *testing.T) {
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "yearly", execFunc(succeed), func(s *Spec) { s.Schedule = mustSchedule(t, "@yearly") }))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run, err := h.runner.Begin(token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.runner.Begin(token + 1); err == nil {
		t.Fatal("a second Begin while leading succeeded")
	}
	triggered := make(chan error, 1)
	go func() { triggered <- h.runner.Trigger(ctx, "yearly", t0) }()
	lctx, end := context.WithCancel(context.Background())
	led := make(chan error, 1)
	go func() { led <- run(lctx) }()
	if err := <-triggered; err != nil {
		t.Fatalf("Trigger right after Begin = %v, want it run by the term", err)
	}
	rows := h.waitRows("yearly", "manual run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
	if rows[0].Token != token || !rows[0].Manual {
		t.Fatalf("rows=%+v", rows)
	}
	end()
	if err := <-led; err != nil {
		t.Fatalf("the term ended with %v", err)
	}
	if err := h.runner.Trigger(ctx, "yearly", t0.Add(time.Second)); !errors.Is(err, ErrNotLeading) {
		t.Fatalf("Trigger after the term = %v, want ErrNotLeading", err)
	}
}

// raiseWaits is a ledger whose raises wait until their context ends, as a raise does behind an
// open transaction on a job's fence; raising is closed when the first one begins.
type raiseWaits struct {
	*fakeLedger
	raising chan struct{}
	once    sync.Once
}

func (l *raiseWaits) RaiseAll(ctx context.Context, _ []string, _ int64) error {
	l.once.Do(func() { close(l.raising) })
	<-ctx.Done()
	return ctx.Err()
}

// A shutdown that comes while the takeover still waits on a raise ends within its grace: Drain
// and Trigger give up with their contexts instead of waiting for the firing loop to start.
func TestRunner_DrainDuringTakeoverEndsWithItsGrace(t *testing.T) {
	l := &raiseWaits{fakeLedger: newFakeLedger(), raising: make(chan struct{})}
	r := mustNew(t, []Spec{spec(t, "a", execFunc(succeed), nil)}, Options{Node: "n1", Ledger: l, Clock: newFakeClock(t0)})
	term := leadAsync(t, r, token)
	<-l.raising
	grace, cancel := context.WithCancel(context.Background())
	drained := make(chan struct{})
	go func() { r.Drain(grace); close(drained) }()
	tctx, tcancel := context.WithCancel(context.Background())
	triggered := make(chan error, 1)
	go func() { triggered <- r.Trigger(tctx, "a", t0) }()
	cancel()
	tcancel()
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		t.Fatal("Drain waited for the takeover after its grace ended")
	}
	select {
	case err := <-triggered:
		if !errors.Is(err, ErrNotLeading) {
			t.Fatalf("Trigger whose context ended during the takeover = %v, want ErrNotLeading", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Trigger waited for the takeover after its context ended")
	}
	_ = term.stop() // the takeover's error, its context cancelled
}
