package jobs

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
	"scheduler/internal/jobs/internal/outcomes"
	"scheduler/internal/testenv"
)

var errStoreDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

// flakyLedger is a fakeLedger whose outcome writes fail while failing is positive (each
// failure counts it down), or for good while down is set.
type flakyLedger struct {
	*fakeLedger
	failing   atomic.Int32
	down      atomic.Bool
	completes atomic.Int32 // Complete and CompleteMany calls
	// lost, while positive, makes outcome writes commit and then fail (each counts it down),
	// as when the store goes away between a commit and its reply.
	lost atomic.Int32
}

func (l *flakyLedger) fail() bool {
	l.completes.Add(1)
	if l.down.Load() {
		return true
	}
	return countDown(&l.failing)
}

// countDown decrements n if it is positive and reports whether it did.
func countDown(n *atomic.Int32) bool {
	for {
		v := n.Load()
		if v <= 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

func (l *flakyLedger) Complete(ctx context.Context, token int64, c scheduler.Completion) (scheduler.Run, error) {
	if l.fail() {
		return scheduler.Run{}, errStoreDown
	}
	r, err := l.fakeLedger.Complete(ctx, token, c)
	if err == nil && countDown(&l.lost) {
		return scheduler.Run{}, errStoreDown
	}
	return r, err
}

// batchFlakyLedger is a flakyLedger under another type. Every Ledger has CompleteMany and the
// runner writes a lone outcome with Complete and several with CompleteMany, so both harnesses
// take the same paths; the Single and Batched subtests are kept as they were.
type batchFlakyLedger struct{ *flakyLedger }

// CompleteMany fails like Complete, for the whole batch.
func (l *flakyLedger) CompleteMany(ctx context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
	if l.fail() {
		return nil, errStoreDown
	}
	done := make([]scheduler.Result, len(cs))
	for i, c := range cs {
		r, err := l.fakeLedger.Complete(ctx, token, c)
		done[i] = scheduler.Result{Run: r, Written: err == nil}
	}
	if countDown(&l.lost) {
		return nil, errStoreDown
	}
	return done, nil
}

// outcomeHarness runs a job over a flaky ledger; batched selects CompleteMany.
type outcomeHarness struct {
	t      *testing.T
	clock  *fakeClock
	ledger *flakyLedger
	runner *Runner
	logs   *observer.ObservedLogs
	runs   atomic.Int32
}

func newOutcomeHarness(t *testing.T, batched bool) *outcomeHarness {
	t.Helper()
	return newOutcomeHarnessWith(t, batched, nil)
}

// newOutcomeHarnessWith is newOutcomeHarness with the runner's options changed by mod.
func newOutcomeHarnessWith(t *testing.T, batched bool, mod func(*Options)) *outcomeHarness {
	t.Helper()
	h := &outcomeHarness{t: t, clock: newFakeClock(t0.Add(30 * time.Second)), ledger: &flakyLedger{fakeLedger: newFakeLedger()}}
	core, logs := observer.New(zapcore.WarnLevel)
	h.logs = logs
	var led scheduler.Ledger = h.ledger
	if batched {
		led = batchFlakyLedger{h.ledger}
	}
	exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) { h.runs.Add(1); return "ran", nil })
	opts := Options{Node: "n1", Ledger: led, Clock: h.clock,
		Logger: zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))}
	if mod != nil {
		mod(&opts)
	}
	r := mustNew(t, []Spec{spec(t, "job", exec, nil)}, opts)
	h.runner = r
	return h
}

// bothWrites runs f as the subtests Single and Batched: a lone outcome is written with
// Complete, several with CompleteMany.
func bothWrites(t *testing.T, f func(t *testing.T, batched bool)) {
	for _, batched := range []bool{false, true} {
		name := "Single"
		if batched {
			name = "Batched"
		}
		t.Run(name, func(t *testing.T) { f(t, batched) })
	}
}

// lead starts a term; the returned function ends it and returns what Lead returned.
func (h *outcomeHarness) lead(tok int64) func() error {
	return leadAsync(h.t, h.runner, tok).stop
}

// leadStoreDown starts a term with the store down and fires 12:01, until the run's outcome
// write waits in its backoff; the returned function ends the term, as lead's does.
func (h *outcomeHarness) leadStoreDown(tok int64) func() error {
	h.t.Helper()
	h.ledger.down.Store(true)
	stop := h.lead(tok)
	testenv.Eventually(h.t, 10*time.Second, time.Millisecond, "leading", func() bool { return h.clock.Pending() == 1 })
	h.clock.Advance(time.Minute) // 12:01 fires
	testenv.Eventually(h.t, 10*time.Second, time.Millisecond, "outcome backoff", func() bool { return h.ledger.completes.Load() >= 1 && h.clock.Pending() == 2 })
	return stop
}

func TestRunner_OutcomeWriteIsRetried(t *testing.T) {
	bothWrites(t, func(t *testing.T, batched bool) {
		const failures = 3
		h := newOutcomeHarness(t, batched)
		h.ledger.failing.Store(failures)
		h.lead(token)
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "leading", func() bool { return h.clock.Pending() == 1 })
		h.clock.Advance(time.Minute) // 12:01 fires
		for i := range failures {
			// The loop's timer (the next claim) and the outcome's backoff.
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "outcome backoff", func() bool { return h.ledger.completes.Load() == int32(i+1) && h.clock.Pending() == 2 })
			h.clock.Advance(outcomes.MaxRetryDelay)
		}
		rows := waitForRows(t, h.ledger.fakeLedger, func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
		if n := h.runs.Load(); n != 1 {
			t.Fatalf("executions=%d, want 1", n)
		}
		if len(rows) != 1 || rows[0].Attempt != 1 || rows[0].Token != token {
			t.Fatalf("rows=%+v, want one run succeeded, attempt 1, token %d", rows, token)
		}
		if n := h.ledger.completes.Load(); n != failures+1 {
			t.Fatalf("outcome writes=%d, want %d", n, failures+1)
		}
	})
}

// TestRunner_OutcomeWriteAnswerLost: an outcome write commits but its answer is lost, so the
// runner writes it again and the ledger finds the run finished already. That is the outcome
// written, under this term's token: the run finished once, and nothing says its outcome was
// not recorded.
func TestRunner_OutcomeWriteAnswerLost(t *testing.T) {
	bothWrites(t, func(t *testing.T, batched bool) {
		h := newOutcomeHarness(t, batched)
		h.ledger.lost.Store(1)
		stop := h.lead(token)
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "leading", func() bool { return h.clock.Pending() == 1 })
		h.clock.Advance(time.Minute) // 12:01 fires
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "outcome backoff", func() bool { return h.ledger.completes.Load() == 1 && h.clock.Pending() == 2 })
		h.clock.Advance(outcomes.MaxRetryDelay)
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "the outcome written again", func() bool { return h.ledger.completes.Load() == 2 })
		if err := stop(); err != nil { // the term's lines are all written once it returns
			t.Fatalf("Lead=%v", err)
		}
		rows := h.ledger.snapshot("job")
		if len(rows) != 1 || rows[0].Status != scheduler.StatusSucceeded || rows[0].Attempt != 1 || h.runs.Load() != 1 {
			t.Fatalf("rows=%+v after %d executions, want one run succeeded once, attempt 1", rows, h.runs.Load())
		}
		if errs := h.logs.FilterLevelExact(zapcore.ErrorLevel).All(); len(errs) != 0 {
			t.Fatalf("error lines %+v: the second write of an outcome that was written is no error", errs)
		}
	})
}

func TestRunner_OutcomeLostWhenTermEnds(t *testing.T) {
	bothWrites(t, func(t *testing.T, batched bool) {
		h := newOutcomeHarness(t, batched)
		stop := h.leadStoreDown(token)
		if err := stop(); err != nil {
			t.Fatalf("Lead=%v", err)
		}
		rows := h.ledger.snapshot("job")
		if len(rows) != 1 || rows[0].Status != scheduler.StatusRunning {
			t.Fatalf("rows=%+v, want the run left running", rows)
		}
		lost := h.logs.FilterMessageSnippet("the next leader runs the slot again").All()
		if len(lost) != 1 || lost[0].Level != zapcore.WarnLevel {
			t.Fatalf("lost-outcome lines=%+v, want one warning", lost)
		}
		fields := lost[0].ContextMap()
		for _, k := range []string{"job", "slot", "run_id", "attempt", "token"} {
			if _, ok := fields[k]; !ok {
				t.Errorf("the lost-outcome line has no %q: %v", k, fields)
			}
		}
		if fields["run_id"] != rows[0].RunID || fields["token"] != token || fields["attempt"] != int64(1) {
			t.Errorf("fields=%v, want run %d, token %d, attempt 1", fields, rows[0].RunID, token)
		}

		// This runner leads again once the store is back: it writes the outcome it kept
		// and does not run the slot again.
		h.ledger.down.Store(false)
		h.lead(token + 1)
		rows = waitForRows(t, h.ledger.fakeLedger, func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
		if n := h.runs.Load(); n != 1 {
			t.Fatalf("executions=%d, want 1: a run whose executor returned was run again", n)
		}
		if rows[0].Attempt != 1 || rows[0].Completion.Output != "ran" {
			t.Fatalf("rows=%+v, want the kept outcome, attempt 1", rows)
		}
	})
}

// TestRunner_KeptOutcomeOfABlockedJob: a runner that kept a run's outcome (its term ended before
// the write landed) leads again, but the job's fence was raised from outside meanwhile, so the
// job is blocked. The kept outcome waits for the job's unblocking; once the fence is reset it is
// written, and the slot is not run again.
func TestRunner_KeptOutcomeOfABlockedJob(t *testing.T) {
	h := newOutcomeHarnessWith(t, false, func(o *Options) {
		o.Confirm = func(context.Context, int64) error { return nil } // etcd confirms every term
	})
	stop := h.leadStoreDown(token)
	if err := stop(); err != nil {
		t.Fatalf("Lead=%v", err)
	}

	h.ledger.down.Store(false)
	h.ledger.raise("job", outsideFence)
	h.lead(token + 1)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "job blocked", func() bool { return len(h.runner.Blocked()) == 1 })
	kept := h.runner.unwritten.Len()
	if kept != 1 {
		t.Fatalf("kept outcomes=%d while the job is blocked, want 1", kept)
	}
	h.ledger.reset("job")
	for i := 0; len(h.runner.Blocked()) != 0 && i < 100; i++ {
		h.clock.Advance(time.Minute) // the blocked job's fence is raised again at the latest every 30 s
		time.Sleep(10 * time.Millisecond)
	}
	first := t0.Add(time.Minute) // the slot whose outcome was kept
	rows := waitForRows(t, h.ledger.fakeLedger, func(r []ledgerRow) bool {
		return len(r) > 0 && r[0].ScheduledAt.Equal(first) && r[0].Status == scheduler.StatusSucceeded
	})
	// Every later slot ran once under the new term; the kept one was not run again.
	if n := h.runs.Load(); int(n) != len(rows) || rows[0].Token != token || rows[0].Completion.Output != "ran" {
		t.Fatalf("executions=%d rows=%+v, want the kept outcome written for slot %s and one execution per slot",
			n, rows, first.Format(time.RFC3339))
	}
}

func TestRunner_DrainWaitsForOutcomeWrite(t *testing.T) {
	h := newOutcomeHarness(t, false)
	h.leadStoreDown(token)
	grace, expire := context.WithCancel(context.Background())
	defer expire()
	drained := make(chan struct{})
	go func() { h.runner.Drain(grace); close(drained) }()
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "draining", func() bool { return len(h.logs.All()) > 0 && h.clock.Pending() == 1 })
	select {
	case <-drained:
		t.Fatal("Drain returned while an outcome write was being retried within the grace")
	case <-time.After(20 * time.Millisecond):
	}
	h.ledger.down.Store(false)
	h.clock.Advance(outcomes.MaxRetryDelay)
	<-drained
	rows := h.ledger.snapshot("job")
	if len(rows) != 1 || rows[0].Status != scheduler.StatusSucceeded || h.runs.Load() != 1 {
		t.Fatalf("rows=%+v executions=%d, want one run, succeeded", rows, h.runs.Load())
	}
}

func waitForRows(tb testing.TB, l *fakeLedger, cond func([]ledgerRow) bool) []ledgerRow {
	tb.Helper()
	var rows []ledgerRow
	testenv.Eventually(tb, 10*time.Second, time.Millisecond, "ledger rows", func() bool { rows = l.snapshot("job"); return cond(rows) })
	return rows
}

// TestRunner_KeptOutcomeCloseRetried: a runner that kept a run's outcome (its term ended before
// the write landed) leads again, and the write of the kept outcome at the takeover fails once.
// It is written again in that term, like any outcome write, and counted once; the slot is not
// run again. Before, the failure was logged and the run left running, its outcome forgotten:
// the next takeover ran the slot again.
func TestRunner_KeptOutcomeCloseRetried(t *testing.T) {
	bothWrites(t, func(t *testing.T, batched bool) {
		var counted atomic.Int32
		h := newOutcomeHarnessWith(t, batched, func(o *Options) {
			count := func(string, scheduler.Status) { counted.Add(1) }
			o.Hooks.Finished = func(job string, st scheduler.Status, _ time.Duration) { count(job, st) }
			o.Hooks.Recorded = count
		})
		stop := h.leadStoreDown(token)
		if err := stop(); err != nil {
			t.Fatalf("Lead=%v", err)
		}
		h.ledger.down.Store(false)
		h.ledger.failing.Store(1) // the takeover's write of the kept outcome
		stop = h.lead(token + 1)
		rows := waitForRows(t, h.ledger.fakeLedger, func(r []ledgerRow) bool {
			if h.ledger.failing.Load() == 0 {
				h.clock.Advance(outcomes.MaxRetryDelay / 10) // to the write's retry
			}
			return len(r) > 0 && r[0].Status == scheduler.StatusSucceeded
		})
		if err := stop(); err != nil {
			t.Fatalf("Lead=%v", err)
		}
		if n := h.runs.Load(); n != 1 || rows[0].Attempt != 1 || rows[0].Completion.Output != "ran" || !rows[0].ScheduledAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("executions=%d rows=%+v, want the kept outcome of 12:01 written, attempt 1, the slot run once", n, rows)
		}
		if n := counted.Load(); n != 1 {
			t.Fatalf("outcomes counted %d times, want 1", n)
		}
	})
}
