package jobs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// hangingLedger is a fakeLedger whose first hang claims (ahead or at fire) wait until their
// context ends: a store that stopped answering without closing its connection.
type hangingLedger struct {
	*fakeLedger
	hang, hung atomic.Int64
}

func (l *hangingLedger) wait(ctx context.Context) bool {
	if l.hang.Add(-1) < 0 {
		return false
	}
	l.hung.Add(1)
	<-ctx.Done()
	return true
}

func (l *hangingLedger) ClaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	if l.wait(ctx) {
		return nil, ctx.Err()
	}
	return l.fakeLedger.ClaimMany(ctx, token, node, slots)
}

func (l *hangingLedger) ClaimAheadMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	if l.wait(ctx) {
		return nil, ctx.Err()
	}
	return l.fakeLedger.ClaimAheadMany(ctx, token, node, slots)
}

// TestRunner_HungClaimBounded: a claim that the store never answers fails when
// Options.WriteTimeout ends, and the slot is claimed again and runs, where it used to wait for
// as long as the store hung, with every other slot behind it.
func TestRunner_HungClaimBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ahead time.Duration
	}{
		{"Ahead", 0},   // the claim ahead hangs: the slot is claimed when it fires
		{"AtFire", -1}, // the claim at fire hangs: the slot is claimed again shortly
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock(t0.Add(30 * time.Second))
			led := &hangingLedger{fakeLedger: newFakeLedger()}
			led.hang.Store(1)
			ran := make(chan time.Time, 16)
			exec := execFunc(func(_ context.Context, a scheduler.Attempt) (string, error) {
				ran <- a.Slot
				return "ran", nil
			})
			r := mustNew(t, []Spec{spec(t, "job", exec, nil)},
				Options{Node: "n1", Ledger: led, Clock: clk, ClaimAhead: tc.ahead, WriteTimeout: 100 * time.Millisecond})
			l := leadAsync(t, r, token)
			defer l.stopped()
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "leading", func() bool { return clk.Pending() >= 1 })
			clk.Advance(30 * time.Second) // 12:01 fires
			testenv.Eventually(t, 10*time.Second, time.Millisecond, "a claim hanging", func() bool { return led.hung.Load() == 1 })
			testenv.Eventually(t, 30*time.Second, 10*time.Millisecond, "12:01 run after the hung claim", func() bool {
				select {
				case at := <-ran:
					if !at.Equal(t0.Add(time.Minute)) {
						t.Fatalf("ran slot %s first, want 12:01", at)
					}
					return true
				default:
					clk.Advance(100 * time.Millisecond) // the retry's backoff, on the fake clock
					return false
				}
			})
		})
	}
}
