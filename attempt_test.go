package scheduler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestAttempt_Fenced: an attempt's fenced writes go to the store it is bound to, with its own job
// and token, on both stores; the store's refusal comes back as it is.
func TestAttempt_Fenced(t *testing.T) {
	fencetest.Each(t, time.Minute, func(ctx context.Context, t *testing.T, s *fence.Store) {
		a := scheduler.Attempt{Job: "stock", Token: 7, Attempt: 1, RunID: "1", Fencer: s}
		if err := a.Fenced(ctx, func(ctx context.Context, tx scheduler.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO stock_scans (sku, quantity) VALUES ('a', 1)`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if n, err := a.FencedStatements(ctx, "", `INSERT INTO stock_scans (sku, quantity) VALUES ('b', 2)`); err != nil || n != 1 {
			t.Fatalf("FencedStatements = %d, %v; want 1 row", n, err)
		}
		// Both entered the fence of the attempt's job with its token.
		if f, err := s.Fences(ctx, "stock"); err != nil || f["stock"] != 7 {
			t.Fatalf("fences = %v (err %v), want stock at 7", f, err)
		}
		if err := s.RaiseAll(ctx, []string{"stock"}, 8); err != nil {
			t.Fatal(err)
		}
		var fe *scheduler.FenceError
		err := a.Fenced(ctx, func(context.Context, scheduler.Tx) error { return nil })
		if !errors.Is(err, scheduler.ErrFenced) || !errors.As(err, &fe) || fe.Job != "stock" || fe.Token != 7 || fe.Fence != 8 {
			t.Fatalf("stale Fenced: err %v, want a *FenceError for stock, token 7, fence 8", err)
		}
		_, err = a.FencedStatements(ctx, "", `INSERT INTO stock_scans (sku, quantity) VALUES ('c', 3)`)
		if !errors.Is(err, scheduler.ErrFenced) || !errors.As(err, &fe) || fe.Fence != 8 {
			t.Fatalf("stale FencedStatements: err %v, want a *FenceError with fence 8", err)
		}
	})
}

// TestAttempt_NoFencer: an attempt bound to no store writes nothing and says why.
func TestAttempt_NoFencer(t *testing.T) {
	a := scheduler.Attempt{Job: "stock", Token: 7}
	called := false
	err := a.Fenced(context.Background(), func(context.Context, scheduler.Tx) error { called = true; return nil })
	if !errors.Is(err, scheduler.ErrNoFencer) || called {
		t.Fatalf("Fenced = %v (fn called %v), want ErrNoFencer and fn not called", err, called)
	}
	if _, err := a.FencedStatements(context.Background(), "", "SELECT 1"); !errors.Is(err, scheduler.ErrNoFencer) {
		t.Fatalf("FencedStatements = %v, want ErrNoFencer", err)
	}
	if errors.Is(err, scheduler.ErrFenced) {
		t.Fatalf("err %v is ErrFenced: a missing store must not end a term", err)
	}
}
