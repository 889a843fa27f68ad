package jobs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler/internal/testenv"
)

// claimlessLedger is a fakeLedger whose claims fail while down is set.
type claimlessLedger struct {
	*fakeLedger
	down atomic.Bool
}

func (l *claimlessLedger) ClaimMany(ctx context.Context, token int64, node string, slots []SlotKey) ([]Claimed, error) {
	if l.down.Load() {
		return nil, errStoreDown
	}
	return l.fakeLedger.ClaimMany(ctx, token, node, slots)
}

func (l *claimlessLedger) ClaimAhead(ctx context.Context, token int64, node string, slots []SlotKey) ([]Claimed, error) {
	if l.down.Load() {
		return nil, errStoreDown
	}
	return l.fakeLedger.ClaimAhead(ctx, token, node, slots)
}

// TestRunner_BacklogSkipSaysWhy: slots whose claims waited for the store fire together when it is
// back; under overlap skip one runs and the others are skipped, saying that a slot of the same
// backlog runs, not that a previous run is still running: none was.
func TestRunner_BacklogSkipSaysWhy(t *testing.T) {
	exec := &countingExec{}
	led := &claimlessLedger{fakeLedger: newFakeLedger()}
	clock := newFakeClock(t0.Add(30 * time.Second))
	r, err := New([]Spec{spec(t, "job", exec, nil)}, Options{Node: "n1", Ledger: led, Clock: clock, Logger: zaptest.NewLogger(t),
		ClaimAhead: -1}) // slots claimed as they fire: the backlog's claims are the loop's own
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- r.Lead(ctx, token) }()
	defer func() {
		cancel()
		if err := <-result; err != nil {
			t.Errorf("Lead=%v", err)
		}
	}()
	led.down.Store(true)
	for range 3 { // 12:01, 12:02, 12:03 fire while the store is down
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "idle loop", func() bool { return clock.Pending() == 1 })
		clock.Advance(time.Minute)
	}
	led.down.Store(false)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "idle loop", func() bool { return clock.Pending() == 1 })
	clock.Advance(5 * time.Second) // the backlog's retry, before 12:04
	rows := waitForRows(t, led.fakeLedger, func(r []ledgerRow) bool { return len(r) >= 3 && count(r, StatusRunning) == 0 })
	if exec.n.Load() != 1 || count(rows, StatusSucceeded) != 1 || count(rows, StatusSkipped) != 2 {
		t.Fatalf("runs=%d rows=%+v, want one slot of the backlog run and the other two skipped", exec.n.Load(), rows)
	}
	for _, row := range rows {
		if row.Status == StatusSkipped && row.Completion.Reason != reasonBacklogSkip {
			t.Errorf("slot %s skipped with %q, want %q", row.Slot.At.Format(time.TimeOnly), row.Completion.Reason, reasonBacklogSkip)
		}
	}
}
