package jobs

import (
	"context"
	"sync"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// TestRunner_QueuedSlotBackfilledRunsOnce: a slot claimed ahead waits behind a run in progress
// (overlap queue) and is backfilled meanwhile. Its run is the term's own but no claim of it
// failed, so the backfill's claim leaves it to the queue: it runs once. (A first version of
// ownClaim took every run of the term's token not in progress for a lost claim's and ran it
// twice.) The sleeps only order the steps; the assertion holds however long they take.
func TestRunner_QueuedSlotBackfilledRunsOnce(t *testing.T) {
	clk := newFakeClock(t0.Add(30 * time.Second))
	led := newFakeLedger()
	release := make(chan struct{})
	var mu sync.Mutex
	execs := map[string]int{}
	exec := execFunc(func(ctx context.Context, a scheduler.Attempt) (string, error) {
		mu.Lock()
		execs[a.Slot.Format(time.TimeOnly)+map[bool]string{true: "m", false: ""}[a.Manual]]++
		mu.Unlock()
		if a.Manual {
			<-release
		}
		return "ran", nil
	})
	r := mustNew(t, []Spec{spec(t, "job", exec, func(s *Spec) { s.Overlap = OverlapQueue })},
		Options{Node: "n1", Ledger: led, Clock: clk})
	l := leadAsync(t, r, token)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "leading", func() bool { return clk.Pending() >= 1 })
	ctx := context.Background()
	clk.Advance(29*time.Second + 500*time.Millisecond) // 12:00:59.5: 12:01 is claimed ahead
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "12:01 claimed ahead", func() bool {
		for _, row := range led.snapshot("job") {
			if row.ScheduledAt.Equal(t0.Add(time.Minute)) && !row.Manual {
				return true
			}
		}
		return false
	})
	if err := r.Trigger(ctx, "job", t0.Add(59*time.Second)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	clk.Advance(time.Second) // 12:01 fires: queued behind the manual run, with its claim
	time.Sleep(200 * time.Millisecond)
	if err := r.Backfill(ctx, scheduler.SlotKey{Job: "job", At: t0.Add(time.Minute), Backfill: 1}); err != nil {
		t.Logf("backfill: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	close(release)
	time.Sleep(500 * time.Millisecond)
	l.stopped()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("executions by slot: %v", execs)
	if execs["12:01:00"] != 1 {
		t.Fatalf("slot 12:01 executed %d times, want 1", execs["12:01:00"])
	}
}

// TestRunner_ReloadAfterClaimAhead: a reload changes the job's timing after its next slot was
// claimed ahead, keeping that slot. The slot is not run while the ledger records it skipped
// ("the job's schedule changed"), as a first version of ownClaim did.
func TestRunner_ReloadAfterClaimAhead(t *testing.T) {
	clk := newFakeClock(t0.Add(30 * time.Second))
	led := newFakeLedger()
	var mu sync.Mutex
	execs := map[string]int{}
	exec := execFunc(func(ctx context.Context, a scheduler.Attempt) (string, error) {
		mu.Lock()
		execs[a.Slot.Format(time.TimeOnly)]++
		mu.Unlock()
		return "ran", nil
	})
	r := mustNew(t, []Spec{spec(t, "job", exec, nil)}, Options{Node: "n1", Ledger: led, Clock: clk})
	l := leadAsync(t, r, token)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "leading", func() bool { return clk.Pending() >= 1 })
	clk.Advance(29*time.Second + 500*time.Millisecond)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "12:01 claimed ahead", func() bool { return len(led.snapshot("job")) == 1 })
	if err := r.SetTable([]Spec{spec(t, "job", exec, func(s *Spec) { s.Schedule = mustSchedule(t, "* * * * *") })}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	clk.Advance(time.Second)
	time.Sleep(500 * time.Millisecond)
	l.stopped()
	mu.Lock()
	defer mu.Unlock()
	rows := led.snapshot("job")
	t.Logf("executions %v; rows %+v", execs, rows)
	if execs["12:01:00"] > 0 && rows[0].Status != scheduler.StatusSucceeded {
		t.Fatalf("12:01 executed %d times but the ledger says %s (%q)", execs["12:01:00"], rows[0].Status, rows[0].Completion.Reason)
	}
}
