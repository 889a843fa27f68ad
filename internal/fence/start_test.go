package fence

import (
	"errors"
	"testing"
	"time"

	"scheduler"
)

// TestStore_ClaimAhead: a run claimed ahead has not started (attempt 0, no start time) until
// StartMany marks it; the attempt counts only the attempts that started, through a takeover too.
func TestStore_ClaimAhead(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			s := b.fresh(t)(Config{Now: func() time.Time { return now }})
			ctx := testCtx(t)
			base := now
			slot := func(m int) scheduler.SlotKey {
				return scheduler.SlotKey{Job: "inv", At: base.Add(time.Duration(m) * time.Minute)}
			}
			run := func(sl scheduler.SlotKey) scheduler.Run {
				t.Helper()
				last, err := s.History(ctx, "inv", 100)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range last {
					if r.ScheduledAt.Equal(sl.At) {
						return r
					}
				}
				t.Fatalf("no run of slot %s", sl.At)
				return scheduler.Run{}
			}

			res, err := s.ClaimAheadMany(ctx, 5, "n1", []scheduler.SlotKey{slot(1), slot(2), slot(3)})
			if err != nil || len(res) != 3 || !res[0].Written || res[0].Run.Attempt != 0 || res[0].Run.Status != scheduler.StatusRunning {
				t.Fatalf("claim ahead = %+v (err %v), want three running runs, attempt 0", res, err)
			}
			if r := run(slot(1)); r.StartedAt != nil || r.Attempt != 0 {
				t.Fatalf("run claimed ahead = %+v, want no start time and attempt 0", r)
			}

			// Slot 1 starts; slot 2's start is never recorded; slot 3 never starts.
			now = now.Add(time.Minute)
			n, err := s.StartMany(ctx, 5, []scheduler.RunRef{{RunID: res[0].Run.RunID, Job: "inv"}})
			if err != nil || n != 1 {
				t.Fatalf("start = %d (err %v), want 1", n, err)
			}
			if r := run(slot(1)); r.StartedAt == nil || !r.StartedAt.Equal(now) || r.Attempt != 1 {
				t.Fatalf("run started = %+v, want started at %s, attempt 1", r, now)
			}
			if n, err := s.StartMany(ctx, 5, []scheduler.RunRef{{RunID: res[0].Run.RunID, Job: "inv"}}); err != nil || n != 0 {
				t.Fatalf("second start = %d (err %v), want 0: the run started already", n, err)
			}
			if _, err := s.StartMany(ctx, 4, []scheduler.RunRef{{RunID: res[1].Run.RunID, Job: "inv"}}); !errors.Is(err, ErrStale) {
				t.Fatalf("start with an older token: err %v, want ErrStale", err)
			}

			// A new leader takes over: the run that started is attempt 2, those that did not attempt 1.
			if err := s.RaiseAll(ctx, []string{"inv"}, 6); err != nil {
				t.Fatal(err)
			}
			got, err := s.ReclaimMany(ctx, 6, "n2", []scheduler.SlotKey{slot(1), slot(3)})
			if err != nil || len(got) != 2 || !got[0].Written || !got[1].Written {
				t.Fatalf("reclaim = %+v (err %v)", got, err)
			}
			if got[0].Run.Attempt != 2 || got[1].Run.Attempt != 1 {
				t.Fatalf("attempts after the takeover: started %d, never started %d; want 2 and 1", got[0].Run.Attempt, got[1].Run.Attempt)
			}
			if r := run(slot(3)); r.StartedAt == nil {
				t.Fatalf("run taken over = %+v, want a start time", r)
			}

			// An outcome written for a run whose start was not recorded gives it its start.
			now = now.Add(time.Minute)
			if _, err := s.Complete(ctx, 6, scheduler.Completion{RunID: res[1].Run.RunID, Job: "inv", Status: scheduler.StatusSucceeded, Attempt: 1}); err != nil {
				t.Fatal(err)
			}
			if r := run(slot(2)); r.Attempt != 1 || r.StartedAt == nil || r.StartedAt.After(*r.FinishedAt) {
				t.Fatalf("completed run = %+v, want attempt 1 and a start no later than its finish", r)
			}
			// A run claimed ahead and closed without running keeps no start time.
			ahead, err := s.ClaimAheadMany(ctx, 6, "n2", []scheduler.SlotKey{slot(9)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Complete(ctx, 6, scheduler.Completion{RunID: ahead[0].Run.RunID, Job: "inv", Status: scheduler.StatusSkipped, Reason: "paused"}); err != nil {
				t.Fatal(err)
			}
			if r := run(slot(9)); r.Attempt != 0 || r.StartedAt != nil {
				t.Fatalf("run closed without running = %+v, want attempt 0 and no start time", r)
			}
		})
	}
}
