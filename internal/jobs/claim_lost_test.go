package jobs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
	"scheduler/internal/testenv"
)

// claimLossLedger is a fakeLedger whose claims, while lost is positive, commit and then fail
// (each counts it down), as when the store goes away between a commit and its reply.
type claimLossLedger struct {
	*fakeLedger
	lost atomic.Int32
}

func (l *claimLossLedger) ClaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	res, err := l.fakeLedger.ClaimMany(ctx, token, node, slots)
	if err == nil && countDown(&l.lost) {
		return nil, errStoreDown
	}
	return res, err
}

func (l *claimLossLedger) ClaimAheadMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	res, err := l.fakeLedger.ClaimAheadMany(ctx, token, node, slots)
	if err == nil && countDown(&l.lost) {
		return nil, errStoreDown
	}
	return res, err
}

// TestRunner_ClaimAnswerLost: a slot's claim commits but its answer is lost, claimed ahead or
// when it fires. The claim made again finds the run the first one made, running under this
// term's token: the slot is run once, as that claim, not left running in the ledger unrun
// until another leader takes it over.
func TestRunner_ClaimAnswerLost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ahead time.Duration
	}{{"Ahead", 0}, {"AtFire", -time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock(t0.Add(30 * time.Second))
			led := &claimLossLedger{fakeLedger: newFakeLedger()}
			led.lost.Store(1)
			core, logs := observer.New(zapcore.WarnLevel)
			var runs atomic.Int32
			exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) { runs.Add(1); return "ran", nil })
			r := mustNew(t, []Spec{spec(t, "job", exec, nil)}, Options{Node: "n1", Ledger: led, Clock: clk, ClaimAhead: tc.ahead,
				Logger: zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))})
			stop := leadAsync(t, r, token).stop
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "leading", func() bool { return clk.Pending() == 1 })
			clk.Advance(time.Minute) // 12:01 is claimed and fires
			// The claim at fire is retried after a backoff on the fake clock.
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "the slot run", func() bool {
				clk.Advance(100 * time.Millisecond)
				return count(led.snapshot("job"), scheduler.StatusSucceeded) == 1
			})
			if err := stop(); err != nil {
				t.Fatalf("Lead=%v", err)
			}
			rows := led.snapshot("job")
			if n := runs.Load(); n != 1 || len(rows) < 1 || rows[0].Status != scheduler.StatusSucceeded || rows[0].Attempt != 1 {
				t.Fatalf("%d executions, rows %+v; want the 12:01 slot run once, succeeded at attempt 1", n, rows)
			}
			if n := logs.FilterMessageSnippet("answer was lost").Len(); n != 1 {
				t.Errorf("%d lines about the lost answer, want 1", n)
			}
		})
	}
}
