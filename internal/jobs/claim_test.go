package jobs

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/jobs/internal/overlap"
	"scheduler/internal/jobs/internal/slotqueue"
	"scheduler/internal/testenv"
)

func (l *fakeLedger) claimCalls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.claims
}

// countingExec counts its runs.
type countingExec struct{ n atomic.Int32 }

func (c *countingExec) Execute(context.Context, scheduler.Attempt) (string, error) {
	c.n.Add(1)
	return "ok", nil
}

// claimAheadAndStop leads until job's 12:01 slot is claimed ahead, then ends the term before the
// slot fires: the ledger holds a run claimed ahead by a leader now gone.
func claimAheadAndStop(t *testing.T, job Spec) *harness {
	t.Helper()
	h := newHarness(t, t0.Add(30*time.Second), job)
	h.lead(token)
	h.advance(29*time.Second+500*time.Millisecond, 1)
	h.waitRows("job", "claim ahead", func(r []ledgerRow) bool { return len(r) == 1 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestRunner_ClaimsAhead(t *testing.T) {
	exec := &countingExec{}
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", exec, nil))
	h.lead(token)
	// 12:00:59.5: the 12:01 slot is claimed (ClaimAhead 1s) and has not run.
	h.advance(29*time.Second+500*time.Millisecond, 1)
	rows := h.waitRows("job", "claim ahead", func(r []ledgerRow) bool { return len(r) == 1 })
	if rows[0].Status != scheduler.StatusRunning || !rows[0].ScheduledAt.Equal(t0.Add(time.Minute)) || rows[0].Token != token {
		t.Fatalf("rows=%+v, want the 12:01 slot claimed running with token %d", rows, token)
	}
	if n := exec.n.Load(); n != 0 {
		t.Fatalf("%d runs before the slot", n)
	}
	claims := h.ledger.claimCalls()
	h.advance(500*time.Millisecond, 1)
	h.waitRows("job", "run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
	if got := h.ledger.claimCalls(); got != claims {
		t.Fatalf("%d claims when the slot fired, want none", got-claims)
	}
}

func TestRunner_ClaimedAheadIsDecidedAgainAtFireTime(t *testing.T) {
	t.Run("Paused", func(t *testing.T) {
		exec := &countingExec{}
		h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", exec, nil))
		h.lead(token)
		h.advance(29*time.Second+500*time.Millisecond, 1)
		h.waitRows("job", "claim ahead", func(r []ledgerRow) bool { return len(r) == 1 })
		h.paused.Store(true)
		h.advance(500*time.Millisecond, 1)
		rows := h.waitRows("job", "skip", func(r []ledgerRow) bool { return count(r, scheduler.StatusSkipped) == 1 })
		if rows[0].Completion.Reason != reasonPaused || exec.n.Load() != 0 {
			t.Fatalf("rows=%+v runs=%d, want the claimed slot completed skipped (paused), not run", rows, exec.n.Load())
		}
	})
	t.Run("OverlapSkip", func(t *testing.T) {
		b := newBlocker()
		h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", b, nil))
		h.lead(token)
		h.advance(29*time.Second+500*time.Millisecond, 1)
		h.waitRows("job", "claim ahead", func(r []ledgerRow) bool { return len(r) == 1 })
		// A manual run starts between the claim and the slot.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.runner.Trigger(ctx, "job", t0.Add(59*time.Second)); err != nil {
			t.Fatal(err)
		}
		<-b.started
		h.advance(500*time.Millisecond, 2)
		rows := h.waitRows("job", "skip", func(r []ledgerRow) bool { return count(r, scheduler.StatusSkipped) == 1 })
		for _, r := range rows {
			if r.Status == scheduler.StatusSkipped && (r.Manual || r.Completion.Reason != overlap.ReasonRunning) {
				t.Fatalf("rows=%+v, want the 12:01 slot skipped for overlap", rows)
			}
		}
		close(b.release)
	})
}

func TestRunner_NextLeaderRunsSlotClaimedAhead(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   time.Duration // when the next leader takes over, after 12:00
	}{
		{"BeforeTheSlot", 59*time.Second + 800*time.Millisecond},
		{"AfterTheSlot", 70 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exec := &attemptLog{}
			job := spec(t, "job", exec, nil)
			h := claimAheadAndStop(t, job)

			// The next leader, on the same ledger.
			clock := newFakeClock(t0.Add(tc.at))
			next := mustNew(t, []Spec{job}, Options{Node: "n2", Ledger: h.ledger, Clock: clock})
			defer leadAsync(t, next, token+1).stopped()
			if tc.at < time.Minute {
				testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed timer", func() bool { return clock.Pending() == 1 })
				if rows := h.rows("job"); len(rows) != 1 || rows[0].Status != scheduler.StatusRunning {
					t.Fatalf("rows=%+v: the slot claimed ahead must be left for the firing loop", rows)
				}
				clock.Advance(time.Minute - tc.at)
			}
			rows := h.waitRows("job", "run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
			// The old leader never started the run: the next leader's is its first attempt.
			if rows[0].Token != token+1 || rows[0].Attempt != 1 || !rows[0].ScheduledAt.Equal(t0.Add(time.Minute)) {
				t.Fatalf("rows=%+v, want the 12:01 slot taken over by token %d, attempt 1", rows, token+1)
			}
			if ran := exec.attempts(); len(ran) != 1 || ran[0].Token != token+1 || ran[0].Attempt != 1 {
				t.Fatalf("runs=%+v, want one run by the next leader, attempt 1", ran)
			}
		})
	}
}

func TestRunner_ReloadClosesSlotClaimedAhead(t *testing.T) {
	exec := &countingExec{}
	h := newHarness(t, t0.Add(30*time.Second), spec(t, "job", exec, nil))
	h.lead(token)
	h.advance(29*time.Second+500*time.Millisecond, 1)
	h.waitRows("job", "claim ahead", func(r []ledgerRow) bool { return len(r) == 1 })
	err := h.runner.SetTable([]Spec{spec(t, "job", exec, func(s *Spec) { s.Schedule = mustSchedule(t, "@every 90s") })})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "reload", func() bool { return h.clock.Pending() == 1 })
	h.advance(500*time.Millisecond, 1)
	rows := h.waitRows("job", "close", func(r []ledgerRow) bool { return count(r, scheduler.StatusSkipped) == 1 })
	if rows[0].Completion.Reason != reasonReloaded || exec.n.Load() != 0 {
		t.Fatalf("rows=%+v runs=%d", rows, exec.n.Load())
	}
}

// batchLedger is a fakeLedger with CompleteMany and ReclaimMany.
type batchLedger struct {
	*fakeLedger
	batches  atomic.Int32
	singles  atomic.Int32
	reclaims atomic.Int32
}

func (l *batchLedger) Complete(ctx context.Context, token int64, c scheduler.Completion) (scheduler.Run, error) {
	l.singles.Add(1)
	return l.fakeLedger.Complete(ctx, token, c)
}

func (l *batchLedger) CompleteMany(ctx context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
	l.batches.Add(1)
	return l.fakeLedger.CompleteMany(ctx, token, cs)
}

func TestRunner_BatchedCompletions(t *testing.T) {
	const n = 200
	gate := make(chan struct{})
	exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) { <-gate; return "ok", nil })
	var table []Spec
	for i := range n {
		table = append(table, spec(t, fmt.Sprintf("job%03d", i), exec, nil))
	}
	led := &batchLedger{fakeLedger: newFakeLedger()}
	clock := newFakeClock(t0.Add(30 * time.Second))
	var fired atomic.Int32
	r := mustNew(t, table, Options{Node: "n1", Ledger: led, Clock: clock,
		Hooks: Hooks{Fired: func(string, time.Duration) { fired.Add(1) }}})
	term := leadAsync(t, r, token)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "leading", func() bool { return clock.Pending() == 1 })
	clock.Advance(time.Minute)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "all fired", func() bool { return fired.Load() == n })
	close(gate) // the herd ends together
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "all recorded", func() bool {
		done := 0
		for i := range n {
			done += count(led.snapshot(fmt.Sprintf("job%03d", i)), scheduler.StatusSucceeded)
		}
		return done == n
	})
	if err := term.stop(); err != nil {
		t.Fatal(err)
	}
	if b, s := led.batches.Load(), led.singles.Load(); b == 0 || int(b)+int(s) >= n {
		t.Fatalf("%d batches and %d single completions for %d runs ending together", b, s, n)
	}
}

func TestRunner_SlotClaimedAheadOfPausedJobIsClosed(t *testing.T) {
	exec := &countingExec{}
	job := spec(t, "job", exec, nil)
	h := claimAheadAndStop(t, job)
	// The next leader takes over before the slot, with the job paused.
	clock := newFakeClock(t0.Add(59*time.Second + 800*time.Millisecond))
	next := mustNew(t, []Spec{job}, Options{Node: "n2", Ledger: h.ledger, Clock: clock,
		Paused: func(string) bool { return true }})
	defer leadAsync(t, next, token+1).stopped()
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed timer", func() bool { return clock.Pending() == 1 })
	clock.Advance(200 * time.Millisecond)
	rows := h.waitRows("job", "close", func(r []ledgerRow) bool { return count(r, scheduler.StatusSkipped) == 1 })
	if rows[0].Completion.Reason != reasonPaused || exec.n.Load() != 0 {
		t.Fatalf("rows=%+v runs=%d, want the slot claimed ahead by the old leader closed skipped (paused)", rows, exec.n.Load())
	}
}

// ReclaimMany on the batch fake: the runs of slots left running under older tokens.
func (l *batchLedger) ReclaimMany(_ context.Context, token int64, _ string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	l.reclaims.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range slots {
		if err := l.check(s.Job, token); err != nil {
			return nil, err
		}
	}
	res := make([]scheduler.Result, len(slots))
	for i, s := range slots {
		if r, ok := l.runs[idOf(s)]; ok && r.Status == scheduler.StatusRunning && r.Token < token {
			r.Token, r.Attempt = token, r.Attempt+1
			res[i] = scheduler.Result{Run: *r, Written: true}
		}
	}
	return res, nil
}

func TestRunner_ReclaimsOrphansInBatches(t *testing.T) {
	const n = 50
	var table []Spec
	for i := range n {
		table = append(table, spec(t, fmt.Sprintf("job%02d", i), execFunc(succeed), func(s *Spec) { s.Misfire = MisfireSkip }))
	}
	led := &batchLedger{fakeLedger: newFakeLedger()}
	for i := range n {
		// The old leader (token 5) was cut off in the middle of the 12:00 herd.
		led.put(scheduler.Run{Job: fmt.Sprintf("job%02d", i), ScheduledAt: t0, Status: scheduler.StatusRunning, Token: 5, Attempt: 1})
	}
	clock := newFakeClock(t0.Add(30 * time.Second))
	r := mustNew(t, table, Options{Node: "n1", Ledger: led, Clock: clock})
	term := leadAsync(t, r, token)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "orphans finished", func() bool {
		done := 0
		for i := range n {
			for _, row := range led.snapshot(fmt.Sprintf("job%02d", i)) {
				if row.Status == scheduler.StatusSucceeded && row.Token == token && row.Attempt == 2 {
					done++
				}
			}
		}
		return done == n
	})
	if err := term.stop(); err != nil {
		t.Fatal(err)
	}
	if got := led.reclaims.Load(); got != 1 {
		t.Fatalf("%d ReclaimMany calls for %d orphans, want 1", got, n)
	}
}

// slowClaimLedger takes a second of the fake clock for its first claim ahead.
type slowClaimLedger struct {
	*fakeLedger
	clock *fakeClock
	once  sync.Once
}

func (l *slowClaimLedger) ClaimAheadMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	res, err := l.fakeLedger.ClaimAheadMany(ctx, token, node, slots)
	l.once.Do(func() { l.clock.Advance(time.Second) })
	return res, err
}

// TestClaimQueue_RateOnTheRunnersClock: the claim rate that plans a herd's claims is measured
// on the runner's clock, like every other time the runner acts on.
func TestClaimQueue_RateOnTheRunnersClock(t *testing.T) {
	const jobs = 300
	h := newHarness(t, t0.Add(30*time.Second))
	table := make([]Spec, jobs)
	for i := range table {
		table[i] = spec(t, fmt.Sprintf("job%03d", i), execFunc(succeed), nil)
	}
	r := mustNew(t, table, Options{Node: "n1", Ledger: &slowClaimLedger{fakeLedger: h.ledger, clock: h.clock}, Clock: h.clock})
	h.runner = r
	h.lead(token)
	h.advance(29*time.Second, 1) // 12:00:59, when the 12:01 herd is claimed ahead
	rate := func() float64 {
		got := make(chan float64, 1)
		h.runner.mu.Lock()
		ten := h.runner.current
		h.runner.mu.Unlock()
		if ten == nil || !ten.send(context.Background(), func() { got <- ten.queue.Rate() }) {
			t.Fatal("the tenure ended")
		}
		return <-got
	}
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "a measured claim rate", func() bool { return rate() != slotqueue.InitialRate })
	// 300 slots in one second of the runner's clock, averaged with the rate assumed before.
	if got, want := rate(), 0.5*slotqueue.InitialRate+0.5*jobs; got != want {
		t.Fatalf("claim rate=%v slots/s, want %v", got, want)
	}
}
