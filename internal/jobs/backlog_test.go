package jobs

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/jobs/internal/overlap"
	"scheduler/internal/testenv"
)

// claimlessLedger is a fakeLedger whose claims fail while down is set.
type claimlessLedger struct {
	*fakeLedger
	down atomic.Bool
}

func (l *claimlessLedger) ClaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	if l.down.Load() {
		return nil, errStoreDown
	}
	return l.fakeLedger.ClaimMany(ctx, token, node, slots)
}

func (l *claimlessLedger) ClaimAheadMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	if l.down.Load() {
		return nil, errStoreDown
	}
	return l.fakeLedger.ClaimAheadMany(ctx, token, node, slots)
}

// TestRunner_BacklogSkipSaysWhy: slots whose claims waited for the store fire together when it is
// back; under overlap skip one runs and the others are skipped, saying that a slot of the same
// backlog runs, not that a previous run is still running: none was.
func TestRunner_BacklogSkipSaysWhy(t *testing.T) {
	exec := &countingExec{}
	led := &claimlessLedger{fakeLedger: newFakeLedger()}
	clock := newFakeClock(t0.Add(30 * time.Second))
	r := mustNew(t, []Spec{spec(t, "job", exec, nil)}, Options{Node: "n1", Ledger: led, Clock: clock,
		ClaimAhead: -1}) // slots claimed as they fire: the backlog's claims are the loop's own
	defer leadAsync(t, r, token).stopped()
	led.down.Store(true)
	for range 3 { // 12:01, 12:02, 12:03 fire while the store is down
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "idle loop", func() bool { return clock.Pending() == 1 })
		clock.Advance(time.Minute)
	}
	led.down.Store(false)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "idle loop", func() bool { return clock.Pending() == 1 })
	clock.Advance(5 * time.Second) // the backlog's retry, before 12:04
	rows := waitForRows(t, led.fakeLedger, func(r []ledgerRow) bool { return len(r) >= 3 && count(r, scheduler.StatusRunning) == 0 })
	if exec.n.Load() != 1 || count(rows, scheduler.StatusSucceeded) != 1 || count(rows, scheduler.StatusSkipped) != 2 {
		t.Fatalf("runs=%d rows=%+v, want one slot of the backlog run and the other two skipped", exec.n.Load(), rows)
	}
	for _, row := range rows {
		if row.Status == scheduler.StatusSkipped && row.Completion.Reason != overlap.ReasonBacklog {
			t.Errorf("slot %s skipped with %q, want %q", row.ScheduledAt.Format(time.TimeOnly), row.Completion.Reason, overlap.ReasonBacklog)
		}
	}
}

// TestRunner_BacklogFiresWhenTheStoreIsBack: the retries of slots whose claims failed one after
// another grow apart (each failure doubles the wait), yet once a claim succeeds again the store
// is back and every slot still waiting fires at once: none is left without a row until a retry
// long after, to run then behind the slots that came after it. Each skipped slot says why.
func TestRunner_BacklogFiresWhenTheStoreIsBack(t *testing.T) {
	exec := &countingExec{}
	led := &claimlessLedger{fakeLedger: newFakeLedger()}
	clock := newFakeClock(t0.Add(500 * time.Millisecond))
	every2s := func(s *Spec) { s.Schedule = mustSchedule(t, "@every 2s") }
	r := mustNew(t, []Spec{spec(t, "job", exec, every2s)}, Options{Node: "n1", Ledger: led, Clock: clock, ClaimAhead: -1})
	defer leadAsync(t, r, token).stopped()
	led.down.Store(true)
	// 12:00:02, :04 and :06 fire while the store is down, and their claims are retried, further
	// apart each time.
	for range 14 {
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "idle loop", func() bool { return clock.Pending() >= 1 })
		clock.Advance(500 * time.Millisecond)
	}
	led.down.Store(false)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "idle loop", func() bool { return clock.Pending() >= 1 })
	clock.Advance(t0.Add(8 * time.Second).Sub(clock.Now())) // 12:00:08 fires, and its claim succeeds
	rows := waitForRows(t, led.fakeLedger, func(r []ledgerRow) bool { return len(r) >= 4 && count(r, scheduler.StatusRunning) == 0 })
	for _, at := range []time.Duration{2 * time.Second, 4 * time.Second, 6 * time.Second, 8 * time.Second} {
		if !slices.ContainsFunc(rows, func(r ledgerRow) bool { return r.ScheduledAt.Equal(t0.Add(at)) }) {
			t.Errorf("slot %s has no row once the store is back: rows %+v", t0.Add(at).Format(time.TimeOnly), rows)
		}
	}
	backlogRan := slices.ContainsFunc(rows, func(r ledgerRow) bool {
		return r.Status == scheduler.StatusSucceeded && r.ScheduledAt.Before(t0.Add(8*time.Second))
	})
	for _, row := range rows {
		switch {
		case row.Status != scheduler.StatusSkipped:
		case row.Completion.Reason == overlap.ReasonBacklog && !backlogRan:
			// Skipped for a slot of the backlog whose claim then failed: it waited for nothing.
			t.Errorf("slot %s skipped with %q, but no slot of the backlog ran: rows %+v", row.ScheduledAt.Format(time.TimeOnly), row.Completion.Reason, rows)
		case row.Completion.Reason != overlap.ReasonBacklog && row.Completion.Reason != overlap.ReasonHeld:
			t.Errorf("slot %s skipped with %q, want %q or %q", row.ScheduledAt.Format(time.TimeOnly), row.Completion.Reason, overlap.ReasonBacklog, overlap.ReasonHeld)
		}
	}
}

// storelessLedger is a claimlessLedger whose records of slots that end without running fail too.
type storelessLedger struct{ *claimlessLedger }

func (l *storelessLedger) RecordMany(ctx context.Context, token int64, node string, outs []scheduler.Outcome) ([]scheduler.Result, error) {
	if l.down.Load() {
		return nil, errStoreDown
	}
	return l.fakeLedger.RecordMany(ctx, token, node, outs)
}

// TestRunner_SkipRecordsAreRetried: slots skipped while the store is down (overlap skip behind
// a run in progress) are recorded once it is back, with the reason: the ledger has a row for
// every slot, and a later leader does not take a skipped slot for one no leader saw.
func TestRunner_SkipRecordsAreRetried(t *testing.T) {
	b := newBlocker()
	led := &storelessLedger{&claimlessLedger{fakeLedger: newFakeLedger()}}
	clock := newFakeClock(t0.Add(30 * time.Second))
	r := mustNew(t, []Spec{spec(t, "job", b, nil)}, Options{Node: "n1", Ledger: led, Clock: clock,
		ClaimAhead: -1})
	defer leadAsync(t, r, token).stopped()
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "idle loop", func() bool { return clock.Pending() >= 1 })
	clock.Advance(30 * time.Second) // 12:01 fires and runs until released
	<-b.started
	led.down.Store(true)
	// The loop's timer and the run's timeout: the loop is idle.
	idle := func() {
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "idle loop", func() bool { return clock.Pending() == 2 })
	}
	for range 2 { // 12:02 and 12:03 are skipped behind it while the store is down
		idle()
		clock.Advance(time.Minute)
	}
	led.down.Store(false)
	idle()
	clock.Advance(5 * time.Second) // the retry, before 12:04
	rows := waitForRows(t, led.fakeLedger, func(r []ledgerRow) bool { return count(r, scheduler.StatusSkipped) >= 2 })
	for _, row := range rows {
		if row.Status == scheduler.StatusSkipped && row.Completion.Reason != overlap.ReasonRunning {
			t.Errorf("slot %s skipped with %q, want %q", row.ScheduledAt.Format(time.TimeOnly), row.Completion.Reason, overlap.ReasonRunning)
		}
	}
	close(b.release)
}
