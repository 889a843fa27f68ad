package jobs

import (
	"testing"
	"time"
)

// TestPlanCatchup_OrphanIsAlwaysFinished: a slot an older leader started and left running is
// finished by the next leader whatever the misfire policy; the policy applies to the slots
// that never started.
func TestPlanCatchup_OrphanIsAlwaysFinished(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	orphan := LedgerRun{RunID: 9, Slot: SlotKey{Job: "job", At: at(1)}, Status: StatusRunning, Token: 5, Attempt: 1}
	done := LedgerRun{RunID: 8, Slot: SlotKey{Job: "job", At: at(0)}, Status: StatusSucceeded, Token: 5, Attempt: 1}
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
			plan, err := planCatchup(&s, at(4).Add(30*time.Second), []LedgerRun{done, orphan}, []LedgerRun{orphan}, &orphan)
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
