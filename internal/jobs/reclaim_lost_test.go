package jobs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/jobs/internal/overlap"
	"scheduler/internal/testenv"
)

// reclaimLossLedger is a fakeLedger whose takeovers fail while failing is positive, and, while
// lost is positive, commit and then fail (each counts its own down).
type reclaimLossLedger struct {
	*fakeLedger
	failing, lost atomic.Int32
	claims        atomic.Int32 // while positive, claims made at fire fail (each counts it down)
}

func (l *reclaimLossLedger) ClaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	if countDown(&l.claims) {
		return nil, errStoreDown
	}
	return l.fakeLedger.ClaimMany(ctx, token, node, slots)
}

func (l *reclaimLossLedger) Reclaim(ctx context.Context, token int64, node string, slot scheduler.SlotKey) (scheduler.Run, error) {
	if countDown(&l.failing) {
		return scheduler.Run{}, errStoreDown
	}
	r, err := l.fakeLedger.Reclaim(ctx, token, node, slot)
	if err == nil && countDown(&l.lost) {
		return scheduler.Run{}, errStoreDown
	}
	return r, err
}

func (l *reclaimLossLedger) ReclaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	if countDown(&l.failing) {
		return nil, errStoreDown
	}
	res, err := l.fakeLedger.ReclaimMany(ctx, token, node, slots)
	if err == nil && countDown(&l.lost) {
		return nil, errStoreDown
	}
	return res, err
}

// TestRunner_TakeoverFailsOnce: the takeover of a run an older leader left running fails once,
// the store unreachable, or commits with its answer lost. The new leader takes the run over
// when the store answers again and runs it once, in the same term; it is not left running
// unrun for yet another leader.
func TestRunner_TakeoverFailsOnce(t *testing.T) {
	for _, tc := range []struct {
		name          string
		failing, lost int32
	}{{"StoreDown", 1, 0}, {"AnswerLost", 0, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			exec := &countingExec{}
			clk := newFakeClock(t0.Add(30 * time.Second))
			led := &reclaimLossLedger{fakeLedger: newFakeLedger()}
			led.failing.Store(tc.failing)
			led.lost.Store(tc.lost)
			// The old leader (token 5) claimed 12:00 and froze mid-run.
			led.put(scheduler.Run{Job: "job", ScheduledAt: t0, Status: scheduler.StatusRunning, Token: 5, Attempt: 1})
			r := mustNew(t, []Spec{spec(t, "job", exec, nil)}, Options{Node: "n1", Ledger: led, Clock: clk})
			stop := leadAsync(t, r, token).stop
			rows := waitForRows(t, led.fakeLedger, func(rows []ledgerRow) bool {
				clk.Advance(100 * time.Millisecond) // to the retry of the takeover
				return len(rows) > 0 && rows[0].Status == scheduler.StatusSucceeded
			})
			if err := stop(); err != nil {
				t.Fatalf("Lead=%v", err)
			}
			if n := exec.n.Load(); n != 1 || rows[0].Token != token || rows[0].Attempt != 2 {
				t.Fatalf("%d executions, rows %+v; want the 12:00 run taken over and run once under token %d, attempt 2", n, rows, token)
			}
		})
	}
}

// TestRunner_TakeoverRetrySkipped: an overlap skip job's takeover of the run an older leader
// left running fails (the store down, or its answer lost, then the claim that retries it
// fails) and waits for the store; its next slot fires meanwhile, or with the retry, and runs. The interrupted slot is then skipped
// by the job's policy: its run is closed skipped, with the reason, not left running in the
// ledger (before, the skip was recorded as for a slot without a row, which changed nothing),
// and not run.
func TestRunner_TakeoverRetrySkipped(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		failing, lost, claims int32
		sameFire              bool // the retry and the next slot fire in one step, else the next slot first
	}{
		{"StoreDown/NextSlotRunning", 2, 0, 0, false},
		{"StoreDown/SameFire", 2, 0, 0, true},
		{"AnswerLost/NextSlotRunning", 0, 1, 1, false},
		{"AnswerLost/SameFire", 0, 1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			interrupted, next := t0, t0.Add(time.Minute)
			var ranInterrupted, ranNext atomic.Int32
			release := make(chan struct{})
			exec := execFunc(func(_ context.Context, a scheduler.Attempt) (string, error) {
				if a.Slot.Equal(interrupted) {
					ranInterrupted.Add(1)
					return "ran", nil
				}
				ranNext.Add(1)
				<-release
				return "ran", nil
			})
			clk := newFakeClock(next.Add(-200 * time.Millisecond))
			led := &reclaimLossLedger{fakeLedger: newFakeLedger()}
			led.failing.Store(tc.failing)
			led.lost.Store(tc.lost)
			led.claims.Store(tc.claims)
			led.put(scheduler.Run{Job: "job", ScheduledAt: interrupted, Status: scheduler.StatusRunning, Token: 5, Attempt: 1})
			r := mustNew(t, []Spec{spec(t, "job", exec, nil)}, Options{Node: "n1", Ledger: led, Clock: clk})
			stop := leadAsync(t, r, token).stop
			defer close(release)
			// The takeover at 12:00:59.8 fails; the claim ahead of 12:01 lands and brings its retry
			// forward, which fails too: it is retried after 12:01 fires.
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "12:01 claimed ahead, the takeover failed twice", func() bool {
				return len(led.snapshot("job")) == 2 && led.failing.Load()+led.lost.Load()+led.claims.Load() == 0 && clk.Pending() == 1
			})
			if !tc.sameFire {
				clk.Advance(200 * time.Millisecond) // 12:01 fires and runs
				testenv.Eventually(t, 10*time.Second, time.Millisecond, "12:01 running", func() bool { return ranNext.Load() == 1 })
				// The loop's timer and the attempt's timeout.
				testenv.Eventually(t, 10*time.Second, time.Millisecond, "armed", func() bool { return clk.Pending() == 2 })
			}
			clk.Advance(time.Second)
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "12:01 running", func() bool { return ranNext.Load() == 1 })
			rows := waitForRows(t, led.fakeLedger, func(rows []ledgerRow) bool {
				return len(rows) > 0 && rows[0].ScheduledAt.Equal(interrupted) && rows[0].Status != scheduler.StatusRunning
			})
			release <- struct{}{}
			if err := stop(); err != nil {
				t.Fatalf("Lead=%v", err)
			}
			if rows[0].Status != scheduler.StatusSkipped || rows[0].Completion.Reason != overlap.ReasonHeld || ranInterrupted.Load() != 0 || ranNext.Load() != 1 {
				t.Fatalf("rows %+v, the interrupted slot run %d times, the next %d; want the interrupted closed skipped (%q), not run, the next run once",
					rows, ranInterrupted.Load(), ranNext.Load(), overlap.ReasonHeld)
			}
		})
	}
}
