package fence

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"scheduler"
	"scheduler/internal/fence/internal/postgres"
)

// TestPostgres_BatchFence checks the set-based path of fence_check_all, which the ledger's
// batches enter their fences with once every fence equals their token: the order of the
// package documentation must hold for it as for one fence_check per job.
func TestPostgres_BatchFence(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	slots := []scheduler.SlotKey{{Job: "a", At: at}, {Job: "b", At: at}}

	t.Run("WriterArrivingDuringRaiseIsRefused", func(t *testing.T) {
		// A raise of b to 20 holds b's lock, uncommitted: the batch's first read still sees
		// every fence at 10 and takes the set-based path.
		ctx, s, tx := raisedWithOpenTx(t, func(*postgres.Backend) string { return `SELECT scheduler.fence_check('b', 20)` })
		base, err := lockWaiters(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		claimErr, done := inBackground(func() error {
			_, err := s.ClaimMany(ctx, 10, "old", slots)
			return err
		})
		blocked, err := awaitBlocked(ctx, s, base, done)
		if err != nil {
			t.Fatal(err)
		}
		if !blocked {
			t.Fatalf("the batch with token 10 did not wait for the raise of b in progress (err %v)", <-claimErr)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		var se *scheduler.FenceError
		if err := <-claimErr; !errors.As(err, &se) || se.Job != "b" || se.Fence != 20 || se.Token != 10 {
			t.Fatalf("batch after the raise committed: err %v, want a FenceError{Job b, Token 10, Fence 20}", err)
		}
		if runs, err := s.Window(ctx, []string{"a", "b"}, at, at); err != nil || len(runs) != 0 {
			t.Fatalf("runs written by the refused batch: %+v (err %v), want none", runs, err)
		}
	})

	t.Run("RaiseWaitsForBatchWriter", func(t *testing.T) {
		// A batch writer with token 10 inside its transaction, past the fence.
		ctx, s, tx := raisedWithOpenTx(t, (*postgres.Backend).CheckAllSQL, []string{"b", "a"}, int64(10))
		p := s.b.(*postgres.Backend)
		base, err := lockWaiters(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		raiseErr, done := inBackground(func() error { return s.RaiseAll(ctx, []string{"a", "b"}, 20) })
		blocked, err := awaitBlocked(ctx, s, base, done)
		if err != nil {
			t.Fatal(err)
		}
		if !blocked {
			t.Fatalf("the raise did not wait for the batch writer in flight (err %v)", <-raiseErr)
		}
		if _, err := tx.Exec(ctx, p.ClaimSQL(), []string{"a"}, []time.Time{at}, []bool{false}, int64(10), "old", at); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatalf("the batch writer in flight could not commit: %v", err)
		}
		if err := <-raiseErr; err != nil {
			t.Fatal(err)
		}
		if _, err := s.ClaimMany(ctx, 10, "old", slots); !errors.Is(err, ErrStale) {
			t.Fatalf("batch with token 10 after the raise: err %v, want ErrStale", err)
		}
		if runs, err := s.Window(ctx, []string{"a"}, at, at); err != nil || len(runs) != 1 || runs[0].Token != 10 {
			t.Fatalf("runs = %+v (err %v), want the one the writer committed before the raise", runs, err)
		}
	})

	t.Run("FenceBelowTokenIsRaisedInTheBatch", func(t *testing.T) {
		s, _ := mustPostgresStore(t, Config{})
		ctx := testCtx(t)
		if err := s.RaiseAll(ctx, []string{"a"}, 10); err != nil {
			t.Fatal(err)
		}
		// a at 10 and b without a fence: the path of one fence_check per job raises both.
		res, err := s.ClaimMany(ctx, 20, "new", slots)
		if err != nil || !res[0].Written || !res[1].Written {
			t.Fatalf("claim with a newer token = %+v (err %v), want both written", res, err)
		}
		f, err := s.Fences(ctx, "a", "b")
		if err != nil || f["a"] != 20 || f["b"] != 20 {
			t.Fatalf("fences = %v (err %v), want a and b at 20", f, err)
		}
		if _, err := s.ReclaimMany(ctx, 10, "old", slots); !errors.Is(err, ErrStale) {
			t.Fatalf("reclaim with token 10: err %v, want ErrStale", err)
		}
	})
}

// raisedWithOpenTx returns a Postgres store whose jobs a and b are fenced at
// 10, and a transaction on its pool that has run the statement sql returns
// for its backend and stays open until the caller commits it or the test
// ends.
func raisedWithOpenTx(t *testing.T, sql func(*postgres.Backend) string, args ...any) (context.Context, *Store, pgx.Tx) {
	t.Helper()
	s, _ := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	if err := s.RaiseAll(ctx, []string{"a", "b"}, 10); err != nil {
		t.Fatal(err)
	}
	p := s.b.(*postgres.Backend)
	tx, err := p.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, sql(p), args...); err != nil {
		t.Fatal(err)
	}
	return ctx, s, tx
}
