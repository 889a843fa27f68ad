package jobs_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/jobs"
)

// heldTakeoverLedger is the store whose takeovers fail until open is set.
type heldTakeoverLedger struct {
	*fence.Store
	open atomic.Bool
}

func (l *heldTakeoverLedger) Reclaim(ctx context.Context, token int64, node string, slot scheduler.SlotKey) (scheduler.Run, error) {
	if !l.open.Load() {
		return scheduler.Run{}, errUnreachable
	}
	return l.Store.Reclaim(ctx, token, node, slot)
}

// TestRunner_TakeoverRetrySkippedOnStore: an overlap skip job's takeover of the run an older
// leader left running fails until the job's next slot runs; the retry then finds that run in its
// way. The interrupted slot is closed skipped in the real store, saying why, and not run. Before,
// its skip was recorded as for a slot without a row, which changed nothing: the run stayed
// running for the rest of the term.
func TestRunner_TakeoverRetrySkippedOnStore(t *testing.T) {
	fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		// The older leader (token 5) claimed a slot and stopped.
		interrupted := time.Now().UTC().Truncate(2 * time.Second).Add(-10 * time.Second)
		if _, err := store.ClaimMany(ctx, 5, "old", []scheduler.SlotKey{{Job: "job", At: interrupted}}); err != nil {
			t.Fatal(err)
		}
		led := &heldTakeoverLedger{Store: store}
		var ranInterrupted, ranNext atomic.Int32
		release := make(chan struct{})
		defer close(release)
		exec := execFunc(func(ctx context.Context, a scheduler.Attempt) (string, error) {
			if a.Slot.Equal(interrupted) {
				ranInterrupted.Add(1)
				return "ran", nil
			}
			if ranNext.Add(1) == 1 {
				led.open.Store(true) // the store answers takeovers again, once this run is in the way
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return "ran", nil
		})
		r := newRunner(t, testSpec(t, exec, "@every 2s"), "n2", led)
		leadFor(t, r, 6)
		run := waitRun(ctx, t, store, interrupted)
		if run.Status != scheduler.StatusSkipped || ranInterrupted.Load() != 0 || ranNext.Load() != 1 ||
			run.Reason != "overlap: another run of the job started while this slot's claim waited for the store" {
			t.Fatalf("run=%+v, the interrupted slot executed %d times, the next %d; want it closed skipped for the run in its way, not executed",
				run, ranInterrupted.Load(), ranNext.Load())
		}
		oneRowPerSlot(ctx, t, store)
	})
}

// execFunc adapts a function to scheduler.Executor.
type execFunc func(ctx context.Context, a scheduler.Attempt) (string, error)

func (f execFunc) Execute(ctx context.Context, a scheduler.Attempt) (string, error) { return f(ctx, a) }

// TestRunner_KeptOutcomeCloseRetriedOnStore: a runner keeps a run's outcome, its term ended while
// the store refused the write; it leads again and the write of the kept outcome fails once at the
// takeover. It is written again in that term: the run is succeeded in the real store, executed
// once, and counted finished once. Before, the failed write was logged and the run left running,
// its outcome forgotten.
func TestRunner_KeptOutcomeCloseRetriedOnStore(t *testing.T) {
	fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		led := &flakyLedger{Store: store}
		led.failing.Store(1 << 20) // the store away for the first term's writes
		exec := &countingExec{}
		var finished, recorded atomic.Int32
		r, err := jobs.New([]jobs.Spec{testSpec(t, exec, "@yearly")}, jobs.Options{Node: "n1", Ledger: led, Logger: zaptest.NewLogger(t),
			Hooks: jobs.Hooks{
				Finished: func(string, scheduler.Status, time.Duration) { finished.Add(1) },
				Recorded: func(string, scheduler.Status) { recorded.Add(1) },
			}})
		if err != nil {
			t.Fatal(err)
		}
		first, end := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- r.Lead(first, 10) }()
		at := time.Now().UTC().Truncate(time.Second)
		trigger(ctx, t, r, at)
		for led.failing.Load() > 1<<20-2 && ctx.Err() == nil { // its outcome write failed, and is retried
			time.Sleep(10 * time.Millisecond)
		}
		end()
		if err := <-done; err != nil {
			t.Fatalf("first Lead=%v", err)
		}
		led.failing.Store(1) // the takeover's write of the kept outcome
		leadFor(t, r, 11)
		run := waitRun(ctx, t, store, at)
		if run.Status != scheduler.StatusSucceeded || run.Attempt != 1 || run.Output != "ran" || exec.n.Load() != 1 || led.failing.Load() != 0 {
			t.Fatalf("run=%+v executions=%d, want the kept outcome written (succeeded, attempt 1), executed once, after the failed write",
				run, exec.n.Load())
		}
		for finished.Load() == 0 && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		if f, rec := finished.Load(), recorded.Load(); f != 1 || rec != 0 {
			t.Fatalf("counted finished %d times and recorded %d, want finished once", f, rec)
		}
	})
}

// TestRunner_OrphanTakenOverTooOftenOnStore: a run that older leaders left running after four
// attempts (the first and three takeovers: each leader stopped during it, as one would whose job
// brings it down) is closed failed by the next leader in the real store, and not run again.
func TestRunner_OrphanTakenOverTooOftenOnStore(t *testing.T) {
	fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		slot := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
		res, err := store.ClaimMany(ctx, 5, "old", []scheduler.SlotKey{{Job: "job", At: slot}})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 { // attempts 2 to 4
			if _, err := store.NextAttempt(ctx, 5, "job", res[0].Run.RunID); err != nil {
				t.Fatal(err)
			}
		}
		exec := &countingExec{}
		r := newRunner(t, testSpec(t, exec, "@every 1m"), "n2", store)
		leadFor(t, r, 10)
		run := waitRun(ctx, t, store, slot)
		if run.Status != scheduler.StatusFailed || !strings.Contains(run.Reason, "its leaders stopped during each of its 4 attempts") || exec.n.Load() != 0 {
			t.Fatalf("run %+v, %d executions; want closed failed after its 4 attempts, not run again", run, exec.n.Load())
		}
	})
}
