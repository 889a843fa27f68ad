package jobs

import (
	"strings"
	"testing"
	"time"

	"scheduler"
)

// TestRunner_CatchupNeverMarksRunSlotMissed: the next leader, after an outage longer than the
// catch-up window, finds a run whose outcome was never written: it ran, and is not recorded
// missed.
func TestRunner_CatchupNeverMarksRunSlotMissed(t *testing.T) {
	exec := &countingExec{}
	h := newHarness(t, t0.Add(3*time.Hour), spec(t, "job", exec, func(s *Spec) { s.Misfire = MisfireSkip }))
	h.ledger.put(scheduler.Run{Job: "job", ScheduledAt: t0, Status: scheduler.StatusRunning, Token: 5, Attempt: 1})
	h.lead(token)
	rows := h.waitRows("job", "catch-up", func(r []ledgerRow) bool { return len(r) > 0 && r[0].Status != scheduler.StatusRunning })
	if rows[0].Status == scheduler.StatusMissed || rows[0].Status != scheduler.StatusFailed || !strings.Contains(rows[0].Completion.Reason, "started") {
		t.Fatalf("the run that started is closed %s (%q), want failed, saying it started", rows[0].Status, rows[0].Completion.Reason)
	}
	if exec.n.Load() != 0 {
		t.Fatalf("runs=%d: a slot before the catch-up window ran again", exec.n.Load())
	}
}

// TestRunner_PausedCatchupNeverMarksRunSlotSkipped: a paused job's orphan that started is closed
// failed, not skipped: it ran.
func TestRunner_PausedCatchupNeverMarksRunSlotSkipped(t *testing.T) {
	exec := &countingExec{}
	h := newHarness(t, t0.Add(90*time.Second), spec(t, "job", exec, nil))
	h.paused.Store(true)
	h.ledger.put(scheduler.Run{Job: "job", ScheduledAt: t0.Add(time.Minute), Status: scheduler.StatusRunning, Token: 5, Attempt: 1})
	h.lead(token)
	rows := h.waitRows("job", "catch-up", func(r []ledgerRow) bool { return len(r) > 0 && r[0].Status != scheduler.StatusRunning })
	if rows[0].Status != scheduler.StatusFailed || !strings.Contains(rows[0].Completion.Reason, "paused") || exec.n.Load() != 0 {
		t.Fatalf("the paused job's run that started is closed %s (%q), runs=%d; want failed, saying paused, not run",
			rows[0].Status, rows[0].Completion.Reason, exec.n.Load())
	}
}

// TestRunner_CatchupPastAManualRun: a manual run's slot is its requester's clock, which may run
// ahead of the leader's: the next leader catches up the slots since the last scheduled run all
// the same, as if the manual run were not there.
func TestRunner_CatchupPastAManualRun(t *testing.T) {
	now := t0.Add(5*time.Minute + 30*time.Second)
	for name, manualAt := range map[string]time.Time{"Ahead": now.Add(time.Minute), "FarAhead": time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		"Behind": t0.Add(3*time.Minute + 10*time.Second)} {
		t.Run(name, func(t *testing.T) {
			exec := &countingExec{}
			h := newHarness(t, now, spec(t, "job", exec, func(s *Spec) { s.Misfire, s.Catchup = MisfireAll, time.Hour }))
			h.ledger.put(scheduler.Run{Job: "job", ScheduledAt: t0, Status: scheduler.StatusSucceeded, Token: 3, Attempt: 1})
			h.ledger.put(scheduler.Run{Job: "job", ScheduledAt: manualAt, Manual: true, Status: scheduler.StatusSucceeded, Token: 3, Attempt: 1})
			h.lead(token)
			h.waitRows("job", "catch-up", func(r []ledgerRow) bool {
				n := 0
				for _, row := range r {
					if !row.Manual && row.Status == scheduler.StatusSucceeded && row.ScheduledAt.After(t0) {
						n++
					}
				}
				return n == 5 // 12:01 to 12:05
			})
		})
	}
}
