package retention_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/retention"
)

// TestPruner_Store prunes the real store, which is the pruner's Ledger as it is: the batches
// delete the finished runs beyond the job's retention, keep its last run, and a pass with a token
// below the job's fence is refused with scheduler.ErrFenced.
func TestPruner_Store(t *testing.T) {
	fencetest.Each(t, time.Minute, func(ctx context.Context, t *testing.T, s *fence.Store) {
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		var slots []scheduler.SlotKey
		for i := range 5 {
			slots = append(slots, scheduler.SlotKey{Job: "a", At: now.Add(-time.Duration(5-i) * time.Hour)})
		}
		claimed, err := s.ClaimMany(ctx, 10, "n1", slots)
		if err != nil {
			t.Fatal(err)
		}
		var cs []scheduler.Completion
		for _, c := range claimed {
			cs = append(cs, scheduler.Completion{RunID: c.Run.RunID, Job: "a", Status: scheduler.StatusSucceeded})
		}
		if _, err := s.CompleteMany(ctx, 10, cs); err != nil {
			t.Fatal(err)
		}
		p, err := retention.New(retention.Config{Ledger: s, Batch: 2, Pause: time.Nanosecond, Now: func() time.Time { return now },
			Policies: func() []retention.Policy { return []retention.Policy{{Job: "a", MaxRuns: 2}} }})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := p.Pass(ctx, 10); err != nil || n != 3 {
			t.Fatalf("pass = %d, %v; want the 3 runs beyond the newest 2 deleted", n, err)
		}
		hist, err := s.History(ctx, "a", 10)
		if err != nil || len(hist) != 2 || !hist[0].ScheduledAt.Equal(slots[4].At) {
			t.Fatalf("history = %+v (err %v), want the newest 2 runs", hist, err)
		}
		if err := s.RaiseAll(ctx, []string{"a"}, 20); err != nil {
			t.Fatal(err)
		}
		p, err = retention.New(retention.Config{Ledger: s, Batch: 2, Pause: time.Nanosecond, Now: func() time.Time { return now },
			Policies: func() []retention.Policy { return []retention.Policy{{Job: "a", MaxRuns: 1}} }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Pass(ctx, 10); !errors.Is(err, scheduler.ErrFenced) || !errors.Is(err, fence.ErrStale) {
			t.Fatalf("pass with a stale token: err %v, want scheduler.ErrFenced wrapping fence.ErrStale", err)
		}
		if hist, err := s.History(ctx, "a", 10); err != nil || len(hist) != 2 {
			t.Fatalf("history after the refused pass = %d runs (err %v), want 2", len(hist), err)
		}
	})
}
