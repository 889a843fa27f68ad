package jobs

import (
	"strings"
	"testing"
	"time"

	"scheduler"
)

// TestPlanCatchup_OrphanIsAlwaysFinished: a slot an older leader started and left running is
// finished by the next leader whatever the misfire policy; the policy applies to the slots
// that never started.
func TestPlanCatchup_OrphanIsAlwaysFinished(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	orphan := scheduler.Run{RunID: 9, Job: "job", ScheduledAt: at(1), Status: scheduler.StatusRunning, Token: 5, Attempt: 1}
	done := scheduler.Run{RunID: 8, Job: "job", ScheduledAt: at(0), Status: scheduler.StatusSucceeded, Token: 5, Attempt: 1}
	for _, tc := range []struct {
		misfire Misfire
		run     []int // minutes of the slots run, oldest first
		missed  int
	}{
		{MisfireSkip, []int{1}, 3},
		{MisfireOnce, []int{1, 4}, 2},
		{MisfireAll, []int{1, 2, 3, 4}, 0},
	} {
		t.Run(string(tc.misfire), func(t *testing.T) {
			s := spec(t, "job", execFunc(succeed), func(s *Spec) { s.Misfire = tc.misfire })
			plan, err := planCatchup(&s, at(4).Add(30*time.Second), []scheduler.Run{done, orphan}, []scheduler.Run{orphan}, &orphan)
			if err != nil {
				t.Fatal(err)
			}
			var ran []int
			for _, p := range plan.run {
				ran = append(ran, int(p.slot.At.Sub(t0)/time.Minute))
			}
			if !equalInts(ran, tc.run) || len(plan.missed) != tc.missed || len(plan.close) != 0 {
				t.Fatalf("run %v missed %d closed %d, want run %v missed %d closed 0", ran, len(plan.missed), len(plan.close), tc.run, tc.missed)
			}
			if plan.run[0].orphan == nil || plan.run[0].orphan.RunID != orphan.RunID {
				t.Fatalf("the orphan is not taken over: %+v", plan.run[0])
			}
		})
	}
}

// TestPlanCatchup_OrphanThatRanIsNeverMissed: an orphan older than the catch-up window is not run
// again; one that started (its outcome was lost) is closed failed saying so, never missed; one
// claimed ahead that never started missed its slot.
func TestPlanCatchup_OrphanThatRanIsNeverMissed(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	s := spec(t, "job", execFunc(succeed), func(s *Spec) { s.Catchup = 10 * time.Minute })
	ran := scheduler.Run{RunID: 1, Job: "job", ScheduledAt: at(0), Status: scheduler.StatusRunning, Token: 5, Attempt: 1}
	ahead := scheduler.Run{RunID: 2, Job: "job", ScheduledAt: at(1), Status: scheduler.StatusRunning, Token: 5}
	last := ahead
	plan, err := planCatchup(&s, at(120), nil, []scheduler.Run{ran, ahead}, &last)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.close) != 2 {
		t.Fatalf("closed %+v, want both orphans", plan.close)
	}
	for _, c := range plan.close {
		switch c.RunID {
		case ran.RunID:
			if c.Status != scheduler.StatusFailed || c.Attempt != 1 || !strings.Contains(c.Reason, "started") {
				t.Errorf("orphan that ran closed as %+v, want failed, attempt 1, saying it started", c)
			}
		case ahead.RunID:
			if c.Status != scheduler.StatusMissed {
				t.Errorf("orphan that never started closed as %+v, want missed", c)
			}
		}
	}
	for _, m := range plan.missed {
		if m.Slot.At.Equal(ran.ScheduledAt) {
			t.Errorf("the slot that ran is recorded missed: %+v", m)
		}
	}
}

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
