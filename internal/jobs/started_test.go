package jobs

import (
	"testing"
	"time"

	"scheduler"
)

// TestRunner_StartedRunClaimedAheadIsAttemptTwoWhenTakenOver: a run claimed ahead that started
// is recorded started, so the next leader's takeover is its second attempt.
func TestRunner_StartedRunClaimedAheadIsAttemptTwoWhenTakenOver(t *testing.T) {
	b := newBlocker()
	job := spec(t, "job", b, nil)
	h := newHarness(t, t0.Add(30*time.Second), job)
	h.lead(token)
	h.advance(time.Minute, 1) // 12:01, claimed ahead, fires
	<-b.started
	h.waitRows("job", "start recorded", func(r []ledgerRow) bool { return len(r) == 1 && r[0].Attempt == 1 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	clock := newFakeClock(t0.Add(90 * time.Second))
	next := mustNew(t, []Spec{spec(t, "job", execFunc(succeed), nil)}, Options{Node: "n2", Ledger: h.ledger, Clock: clock})
	defer leadAsync(t, next, token+1).stopped()
	rows := h.waitRows("job", "takeover", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
	if rows[0].Attempt != 2 || rows[0].Token != token+1 {
		t.Fatalf("rows=%+v, want the run taken over as attempt 2", rows)
	}
}
