package fence

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"scheduler"
)

// TestStore_Prune runs the retention rules against Postgres and SQLite.
func TestStore_Prune(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	hoursAgo := func(h int) time.Time { return now.Add(-time.Duration(h) * time.Hour) }
	eachStore(t, Config{Now: func() time.Time { return now }}, func(t *testing.T, ctx context.Context, s *Store) {
		// fill gives job a finished run every hour from 1 to 48 hours ago, a manual run 40
		// hours ago, and leaves the run of 30 hours ago running (an orphan of an old term).
		fill := func(t *testing.T, job string) {
			t.Helper()
			var slots []scheduler.SlotKey
			for h := 1; h <= 48; h++ {
				slots = append(slots, scheduler.SlotKey{Job: job, At: hoursAgo(h)})
			}
			slots = append(slots, scheduler.SlotKey{Job: job, At: hoursAgo(40), Manual: true})
			res, err := s.ClaimMany(ctx, 5, "n1", slots)
			if err != nil {
				t.Fatal(err)
			}
			var cs []scheduler.Completion
			for _, r := range res {
				if !r.Run.Manual && r.Run.ScheduledAt.Equal(hoursAgo(30)) {
					continue
				}
				cs = append(cs, scheduler.Completion{RunID: r.Run.RunID, Job: job, Status: scheduler.StatusSucceeded})
			}
			if _, err := s.CompleteMany(ctx, 5, cs); err != nil {
				t.Fatal(err)
			}
		}
		// prune calls Prune until a call deletes fewer than the limit.
		prune := func(t *testing.T, r scheduler.Retention) int {
			t.Helper()
			total := 0
			for {
				n, err := s.Prune(ctx, 5, r)
				if err != nil {
					t.Fatalf("prune %+v: %v", r, err)
				}
				total += n
				if n < r.Limit {
					return total
				}
			}
		}
		// left returns the hours ago of job's remaining runs, newest first; a manual run
		// counts negative.
		left := func(t *testing.T, job string) []int {
			t.Helper()
			runs, err := s.History(ctx, job, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var hs []int
			for _, r := range runs {
				h := int(now.Sub(r.ScheduledAt) / time.Hour)
				if r.Manual {
					h = -h
				}
				hs = append(hs, h)
			}
			return hs
		}
		span := func(from, to int, more ...int) []int {
			var hs []int
			for h := from; h <= to; h++ {
				hs = append(hs, h)
			}
			return append(hs, more...)
		}

		t.Run("MaxRunsKeepsNewestFinished", func(t *testing.T) {
			fill(t, "count")
			// A backfilled run of a slot older than all of them: a count limit leaves it too.
			res, err := s.ClaimBackfill(ctx, 5, "n1", scheduler.BackfillSlot{Job: "count", At: hoursAgo(60), ID: 3})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.CompleteMany(ctx, 5, []scheduler.Completion{{RunID: res.Run.RunID, Job: "count", Status: scheduler.StatusSucceeded}}); err != nil {
				t.Fatal(err)
			}
			n := prune(t, scheduler.Retention{Job: "count", Keep: 10, Protect: hoursAgo(6), Limit: 7})
			// The manual and the backfilled runs stay: a count limit deletes the scheduler's own
			// runs only, so that a trigger request handed again, or a backfill carried on, finds
			// its run (before, they were deleted, and the request ran their slots again).
			if got, want := left(t, "count"), span(1, 10, 30, -40, 60); !slices.Equal(got, want) {
				t.Fatalf("left %v, want %v (the newest 10 finished, the running one, the manual and the backfilled one)", got, want)
			}
			if n != 37 {
				t.Fatalf("deleted %d, want 37", n)
			}
		})
		t.Run("MaxAgeRemovesOlder", func(t *testing.T) {
			fill(t, "age")
			n := prune(t, scheduler.Retention{Job: "age", Before: hoursAgo(20), Protect: hoursAgo(6), Limit: 5})
			if got, want := left(t, "age"), span(1, 20, 30); !slices.Equal(got, want) {
				t.Fatalf("left %v, want %v", got, want)
			}
			if n != 28 {
				t.Fatalf("deleted %d, want 28", n)
			}
		})
		t.Run("CatchupWindowAndRunningSurvive", func(t *testing.T) {
			fill(t, "window")
			prune(t, scheduler.Retention{Job: "window", Before: now, Keep: 1, Protect: hoursAgo(6), Limit: 500})
			if got, want := left(t, "window"), span(1, 6, 30); !slices.Equal(got, want) {
				t.Fatalf("left %v, want %v (the catch-up window and the running run)", got, want)
			}
		})
		t.Run("LastRunSurvives", func(t *testing.T) {
			var slots []scheduler.SlotKey
			for h := 100; h <= 110; h++ {
				slots = append(slots, scheduler.SlotKey{Job: "idle", At: hoursAgo(h)})
			}
			claimAndFinish(t, ctx, s, 5, slots, scheduler.StatusFailed)
			prune(t, scheduler.Retention{Job: "idle", Before: now, Protect: hoursAgo(6), Limit: 3})
			if got, want := left(t, "idle"), []int{100}; !slices.Equal(got, want) {
				t.Fatalf("left %v, want %v (the last run)", got, want)
			}
			last, err := s.Last(ctx, "idle")
			if err != nil || !last["idle"].ScheduledAt.Equal(hoursAgo(100)) {
				t.Fatalf("last = %+v (err %v)", last, err)
			}
		})
		t.Run("OtherJobsUntouched", func(t *testing.T) {
			fill(t, "a")
			fill(t, "b")
			prune(t, scheduler.Retention{Job: "a", Keep: 1, Protect: hoursAgo(6), Limit: 100})
			if got := len(left(t, "b")); got != 49 {
				t.Fatalf("job b has %d runs, want 49", got)
			}
		})
		t.Run("StaleTokenDeletesNothing", func(t *testing.T) {
			fill(t, "stale")
			if err := s.RaiseAll(ctx, []string{"stale"}, 9); err != nil {
				t.Fatal(err)
			}
			_, err := s.Prune(ctx, 5, scheduler.Retention{Job: "stale", Keep: 1, Protect: hoursAgo(6), Limit: 100})
			if !errors.Is(err, ErrStale) {
				t.Fatalf("prune with an old token: err %v, want ErrStale", err)
			}
			if got := len(left(t, "stale")); got != 49 {
				t.Fatalf("%d runs left, want 49", got)
			}
		})
		t.Run("BadInput", func(t *testing.T) {
			for _, r := range []scheduler.Retention{
				{Job: "x", Protect: now},                     // no limit
				{Job: "x", Protect: now, Limit: 1, Keep: -1}, // negative keep
				{Job: "x", Limit: 1},                         // no protected window
				{Protect: now, Limit: 1},                     // no job
			} {
				if _, err := s.Prune(context.Background(), 5, r); err == nil {
					t.Errorf("prune %+v: no error", r)
				}
			}
		})
	})
}
