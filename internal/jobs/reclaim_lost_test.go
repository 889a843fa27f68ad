package jobs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"scheduler"
)

// reclaimLossLedger is a fakeLedger whose takeovers fail while failing is positive, and, while
// lost is positive, commit and then fail (each counts its own down).
type reclaimLossLedger struct {
	*fakeLedger
	failing, lost atomic.Int32
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
