package jobs_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/jobs"
)

// lostClaimLedger is the store whose next claim commits and then fails, as when the
// connection drops (a Postgres restart, a cut link) between the commit and its reply.
type lostClaimLedger struct {
	*fence.Store
	lose, ahead atomic.Bool
	lost        chan []scheduler.SlotKey // the slots of the lost claim ahead
}

var errReplyLost = errors.New("unexpected EOF: the reply of the commit was lost")

func (l *lostClaimLedger) ClaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	res, err := l.Store.ClaimMany(ctx, token, node, slots)
	if err == nil && l.lose.CompareAndSwap(true, false) {
		return nil, errReplyLost
	}
	return res, err
}

func (l *lostClaimLedger) ClaimAheadMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	res, err := l.Store.ClaimAheadMany(ctx, token, node, slots)
	if err == nil && l.ahead.CompareAndSwap(true, false) {
		l.lost <- slots
		return nil, errReplyLost
	}
	return res, err
}

// TestRunner_ClaimReplyLost: a claim that committed but whose reply was lost is this term's own
// claim, not another run's: the retried claim finds the run the term claimed and runs it, once.
// Before, the slot was logged "slot already has a run" and left running, never run in the term.
func TestRunner_ClaimReplyLostRealStore(t *testing.T) {
	t.Run("Now", func(t *testing.T) {
		fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
			led := &lostClaimLedger{Store: store}
			led.lose.Store(true)
			exec := &countingExec{}
			r := newRunner(t, testSpec(t, exec, "@yearly"), "n1", led)
			leadFor(t, r, 10)
			at := time.Now().UTC().Truncate(time.Second)
			trigger(ctx, t, r, at)
			run := waitRun(ctx, t, store, at)
			if run.Status != scheduler.StatusSucceeded || run.Attempt != 1 || run.Token != 10 || exec.n.Load() != 1 {
				t.Fatalf("run=%+v executions=%d, want succeeded under token 10, attempt 1, executed once", run, exec.n.Load())
			}
		})
	})
	t.Run("Ahead", func(t *testing.T) {
		fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
			led := &lostClaimLedger{Store: store, lost: make(chan []scheduler.SlotKey, 1)}
			led.ahead.Store(true)
			exec := &countingExec{}
			r := newRunner(t, testSpec(t, exec, "@every 2s"), "n1", led)
			leadFor(t, r, 10)
			var lost []scheduler.SlotKey
			select {
			case lost = <-led.lost:
			case <-ctx.Done():
				t.Fatal("no claim ahead was made")
			}
			for _, sl := range lost {
				run := waitRun(ctx, t, store, sl.At)
				if run.Status != scheduler.StatusSucceeded || run.Attempt != 1 || run.Token != 10 {
					t.Fatalf("run=%+v, want succeeded under token 10, attempt 1", run)
				}
			}
		})
	})
}

// failingReclaimLedger is the store whose first takeover fails (the store unreachable), or, with
// lost, commits and then fails (its reply lost).
type failingReclaimLedger struct {
	*fence.Store
	fail atomic.Bool
	lost bool
}

func (l *failingReclaimLedger) Reclaim(ctx context.Context, token int64, node string, slot scheduler.SlotKey) (scheduler.Run, error) {
	if l.fail.CompareAndSwap(true, false) {
		if l.lost {
			_, _ = l.Store.Reclaim(ctx, token, node, slot)
		}
		return scheduler.Run{}, errUnreachable
	}
	return l.Store.Reclaim(ctx, token, node, slot)
}

// TestRunner_TakeoverFailsOnce: a takeover of an orphan that fails because the store is away
// for a moment, or whose reply is lost, is tried again in the term: the orphan is finished,
// once. Before, it was logged "take over run" and left running for the rest of the term.
func TestRunner_TakeoverFailsOnceRealStore(t *testing.T) {
	for name, lost := range map[string]bool{"Unreachable": false, "ReplyLost": true} {
		t.Run(name, func(t *testing.T) {
			fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
				// The older leader (token 5) claimed a slot a minute ago and stopped.
				slot := time.Now().UTC().Truncate(time.Second).Add(-time.Minute)
				if _, err := store.ClaimMany(ctx, 5, "old", []scheduler.SlotKey{{Job: "job", At: slot, Manual: true}}); err != nil {
					t.Fatal(err)
				}
				led := &failingReclaimLedger{Store: store, lost: lost}
				led.fail.Store(true)
				exec := &countingExec{}
				r := newRunner(t, testSpec(t, exec, "@yearly"), "n2", led)
				leadFor(t, r, 6)
				run := waitRun(ctx, t, store, slot)
				if run.Status != scheduler.StatusSucceeded || run.Token != 6 || run.Attempt != 2 || exec.n.Load() != 1 {
					t.Fatalf("run=%+v executions=%d, want succeeded under token 6, attempt 2, executed once", run, exec.n.Load())
				}
			})
		})
	}
}

// lostOutcomeLedger is the store whose first outcome write commits and then fails, its reply
// lost.
type lostOutcomeLedger struct {
	*fence.Store
	lose atomic.Bool
}

func (l *lostOutcomeLedger) Complete(ctx context.Context, token int64, c scheduler.Completion) (scheduler.Run, error) {
	run, err := l.Store.Complete(ctx, token, c)
	if err == nil && l.lose.CompareAndSwap(true, false) {
		return scheduler.Run{}, errReplyLost
	}
	return run, err
}

func (l *lostOutcomeLedger) CompleteMany(ctx context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
	res, err := l.Store.CompleteMany(ctx, token, cs)
	if err == nil && l.lose.CompareAndSwap(true, false) {
		return nil, errReplyLost
	}
	return res, err
}

// TestRunner_OutcomeReplyLost: an outcome write that committed but whose reply was lost is
// retried, finds the run finished with that outcome under the term's token, and counts as
// written: the run is counted finished once. Before, the retry's "no longer running" was logged
// at error level as a failed record and the run was never counted.
func TestRunner_OutcomeReplyLostRealStore(t *testing.T) {
	fencetest.Each(t, 60*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		led := &lostOutcomeLedger{Store: store}
		led.lose.Store(true)
		exec := &countingExec{}
		var finished atomic.Int32
		r, err := jobs.New([]jobs.Spec{testSpec(t, exec, "@yearly")}, jobs.Options{Node: "n1", Ledger: led, Logger: zaptest.NewLogger(t),
			Hooks: jobs.Hooks{Finished: func(_ string, st scheduler.Status, _ time.Duration) {
				if st == scheduler.StatusSucceeded {
					finished.Add(1)
				}
			}}})
		if err != nil {
			t.Fatal(err)
		}
		leadFor(t, r, 10)
		at := time.Now().UTC().Truncate(time.Second)
		trigger(ctx, t, r, at)
		run := waitRun(ctx, t, store, at)
		if run.Status != scheduler.StatusSucceeded || exec.n.Load() != 1 {
			t.Fatalf("run=%+v executions=%d, want succeeded, executed once", run, exec.n.Load())
		}
		for finished.Load() == 0 && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		if n := finished.Load(); n != 1 {
			t.Fatalf("runs counted finished = %d, want 1", n)
		}
	})
}
