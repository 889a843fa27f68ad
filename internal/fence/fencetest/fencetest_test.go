package fencetest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestEach: a case runs once on each backend, on a migrated store, and StockScans reads back, in
// order, the rows a fenced write put into stock_scans.
func TestEach(t *testing.T) {
	var ran []string
	fencetest.Each(t, time.Minute, func(ctx context.Context, t *testing.T, s *fence.Store) {
		ran = append(ran, t.Name())
		if err := s.Fenced(ctx, "stock", 1, func(ctx context.Context, tx scheduler.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO stock_scans (sku, quantity) VALUES ('b', 1), ('a', 2)`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if got, want := fencetest.StockScans(ctx, t, s), []string{"a", "b"}; !slices.Equal(got, want) {
			t.Fatalf("StockScans = %v, want %v", got, want)
		}
	})
	slices.Sort(ran)
	if want := []string{"TestEach/postgres", "TestEach/sqlite"}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}

// TestUnbatched: over the real store, ReclaimMany takes over the orphans one Reclaim at a time
// and passes over the runs that are not orphans, CompleteMany finishes the running runs one
// Complete at a time and passes over the finished ones, and a stale token fails either call.
func TestUnbatched(t *testing.T) {
	fencetest.Each(t, time.Minute, func(ctx context.Context, t *testing.T, s *fence.Store) {
		at := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
		done, orphan := scheduler.SlotKey{Job: "job", At: at}, scheduler.SlotKey{Job: "job", At: at.Add(time.Hour)}
		claimed, err := s.ClaimMany(ctx, 5, "n1", []scheduler.SlotKey{done, orphan})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, 5, scheduler.Completion{RunID: claimed[0].Run.RunID, Job: "job", Status: scheduler.StatusSucceeded}); err != nil {
			t.Fatal(err)
		}
		if err := s.RaiseAll(ctx, []string{"job"}, 6); err != nil {
			t.Fatal(err)
		}
		led := fencetest.Unbatched{Ledger: s}

		res, err := led.ReclaimMany(ctx, 6, "n2", []scheduler.SlotKey{done, orphan})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 2 || res[0].Written || !res[1].Written || res[1].Run.Token != 6 || res[1].Run.Attempt != 2 {
			t.Fatalf("ReclaimMany = %+v, want the orphan alone taken over, under token 6, attempt 2", res)
		}
		if _, err := led.ReclaimMany(ctx, 5, "n1", []scheduler.SlotKey{orphan}); !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("ReclaimMany with a stale token: err %v, want ErrFenced", err)
		}

		cs := []scheduler.Completion{
			{RunID: claimed[0].Run.RunID, Job: "job", Status: scheduler.StatusFailed},
			{RunID: res[1].Run.RunID, Job: "job", Status: scheduler.StatusSucceeded, Attempt: 2},
		}
		if _, err := led.CompleteMany(ctx, 5, cs); !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("CompleteMany with a stale token: err %v, want ErrFenced", err)
		}
		got, err := led.CompleteMany(ctx, 6, cs)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Written || !got[1].Written || got[1].Run.Status != scheduler.StatusSucceeded {
			t.Fatalf("CompleteMany = %+v, want the running run alone finished", got)
		}
	})
}
