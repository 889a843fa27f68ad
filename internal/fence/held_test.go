package fence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// holdFences opens a transaction on dsn that enters the fence of each job with token by
// fence_verify, as a job's database role does, and leaves it open; release ends it.
func holdFences(t *testing.T, ctx context.Context, dsn string, token int64, jobs ...string) (release func()) {
	t.Helper()
	conn := connectAs(t, ctx, dsn)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if _, err := tx.Exec(ctx, `SELECT scheduler.fence_verify($1, $2)`, j, token); err != nil {
			t.Fatalf("fence_verify(%q, %d): %v", j, token, err)
		}
	}
	return func() { _ = tx.Rollback(context.Background()) }
}

// TestStore_HeldFences: the store names the jobs whose raise would wait for another session's
// lock on their fence (a job role's fence_verify, a writer inside the fence, a raise in flight),
// and only those: not a fence already at the token, not a lock in another database, and none
// once the lock is let go. SQLite names none.
func TestStore_HeldFences(t *testing.T) {
	const old, token = int64(10), int64(20)
	t.Run("postgres", func(t *testing.T) {
		s, dsn := mustPostgresStore(t, Config{})
		ctx := testCtx(t)
		role := testenv.MustRole(t, dsn, "held_job", jobRoleRecipe...)
		// Enough names that the lock keys' high halves cover both signs.
		var all []string
		for i := range 40 {
			all = append(all, fmt.Sprintf("job-%02d", i))
		}
		if err := s.RaiseAll(ctx, all, old); err != nil {
			t.Fatal(err)
		}
		heldFences := func() []string {
			t.Helper()
			got, err := s.HeldFences(ctx, append(slices.Clone(all), "never-fenced"), token)
			if err != nil {
				t.Fatalf("HeldFences: %v", err)
			}
			return got
		}
		if got := heldFences(); len(got) != 0 {
			t.Fatalf("held=%v with no transaction open, want none", got)
		}

		if n := pgCount(t, ctx, s, `SELECT count(DISTINCT hashtextextended('scheduler.job_fence:' || j, 0) < 0)
			FROM unnest(ARRAY['job-03', 'job-04', 'job-05', 'job-06', 'job-07', 'job-08']) AS j`); n != 2 {
			t.Fatalf("the held jobs' lock keys have %d signs, want both", n)
		}
		release := holdFences(t, ctx, role, old, all[3:23]...)
		if got := heldFences(); !slices.Equal(got, all[3:23]) {
			t.Fatalf("held=%v, want %v: the jobs the role's transaction entered", got, all[3:23])
		}
		release()
		if got := heldFences(); len(got) != 0 {
			t.Fatalf("held=%v after the role's transaction ended, want none", got)
		}

		// A writer inside the fence with the old token, as a frozen old leader's write.
		var inside []string
		err := s.Fenced(ctx, all[30], old, func(ctx context.Context, tx scheduler.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT 1`); err != nil { // enters the fence
				return err
			}
			var err error
			inside, err = s.HeldFences(ctx, all, token)
			return err
		})
		if err != nil || !slices.Equal(inside, all[30:31]) {
			t.Fatalf("held=%v, %v while a writer is inside %q's fence, want that job", inside, err, all[30])
		}

		// A fence already at the token: a raise to it waits for nobody.
		if err := s.RaiseAll(ctx, all[35:], token); err != nil {
			t.Fatal(err)
		}
		release = holdFences(t, ctx, role, token, all[35:]...)
		if got := heldFences(); len(got) != 0 {
			t.Fatalf("held=%v for fences at the token, want none", got)
		}
		release()

		// The same job's fence held in another database of the cluster.
		other := mustOpen(t, Config{DSN: testenv.MustDatabase(t)})
		if err := other.RaiseAll(ctx, all[:1], old); err != nil {
			t.Fatal(err)
		}
		otherDSN := testenv.MustRole(t, other.cfg.DSN, "held_job_other", jobRoleRecipe...)
		release = holdFences(t, ctx, otherDSN, old, all[0])
		if got := heldFences(); len(got) != 0 {
			t.Fatalf("held=%v for a lock in another database, want none", got)
		}
		release()
	})
	t.Run("sqlite", func(t *testing.T) {
		s := backends()[1].fresh(t)(Config{})
		ctx := testCtx(t)
		if err := s.RaiseAll(ctx, []string{"a"}, old); err != nil {
			t.Fatal(err)
		}
		if got, err := s.HeldFences(ctx, []string{"a"}, token); err != nil || len(got) != 0 {
			t.Fatalf("HeldFences=%v, %v, want none", got, err)
		}
	})
}

// TestStore_LedgerWriteWaitingForATable: a ledger write that gives up waiting for a lock that
// is no fence's (the runs table locked by another session) says so, and is not reported as a
// fence held or a raise that timed out; once the lock is let go, the write goes through.
func TestStore_LedgerWriteWaitingForATable(t *testing.T) {
	dsn := testenv.MustDatabase(t)
	// One connection, whose prepared statements the warm-up below makes the claim's.
	s := mustOpen(t, Config{DSN: dsn + "&pool_max_conns=1"})
	ctx := testCtx(t)
	const token = int64(7)
	if err := s.RaiseAll(ctx, []string{"job"}, token); err != nil {
		t.Fatal(err)
	}
	// A claim first, as a leader's are: its statements are prepared on the pool's connection,
	// which a prepare could not be while the table is locked.
	warm := scheduler.SlotKey{Job: "job", At: time.Date(2026, 3, 1, 1, 0, 0, 0, time.UTC)}
	if _, err := s.ClaimMany(ctx, token, "n1", []scheduler.SlotKey{warm}); err != nil {
		t.Fatal(err)
	}
	conn := connectAs(t, ctx, dsn)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE scheduler.runs IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	slot := scheduler.SlotKey{Job: "job", At: time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)}
	_, err = s.ClaimMany(ctx, token, "n1", []scheduler.SlotKey{slot})
	var held *scheduler.HeldError
	switch {
	case err == nil:
		t.Fatal("a claim went through while the runs table was locked")
	case errors.Is(err, scheduler.ErrFenceHeld) || errors.As(err, &held) || strings.Contains(err.Error(), "raise"):
		t.Fatalf("a table's lock reported as a fence's: %v", err)
	case !strings.Contains(err.Error(), "no fence's"):
		t.Fatalf("err %v, want one saying the lock waited for is no fence's", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ClaimMany(ctx, token, "n1", []scheduler.SlotKey{slot}); err != nil || len(got) != 1 || !got[0].Written {
		t.Fatalf("claim once the lock was let go: %+v, %v", got, err)
	}
}

// TestStore_RaiseEntersFencesAtTheToken: a raise to a token a fence already has takes no
// exclusive lock, yet a session holding that fence's lock exclusively (the advisory lock
// functions are PUBLIC) makes every write with the token wait. So the raise ends by entering
// each fence as a writer does: it gives up on such a hold, as on an older writer
// (ErrFenceHeld), and raises again once the hold is let go. A job role inside the fence with
// the token shares the lock and does not make it wait.
func TestStore_RaiseEntersFencesAtTheToken(t *testing.T) {
	const token = int64(20)
	s, dsn := mustPostgresStore(t, Config{RaiseTimeout: 200 * time.Millisecond})
	ctx := testCtx(t)
	jobs := []string{"a", "b"}
	if err := s.RaiseAll(ctx, jobs, token); err != nil {
		t.Fatal(err)
	}

	role := testenv.MustRole(t, dsn, "raise_entry_job", jobRoleRecipe...)
	release := holdFences(t, ctx, role, token, "a")
	if err := s.RaiseAll(ctx, jobs, token); err != nil {
		t.Fatalf("raise with a job role inside a's fence at the token: %v, want it raised", err)
	}
	release()

	conn := connectAs(t, ctx, dsn)
	const key = `hashtextextended('scheduler.job_fence:b', 0)`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+key+`)`); err != nil {
		t.Fatal(err)
	}
	if err := s.RaiseAll(ctx, jobs, token); !errors.Is(err, scheduler.ErrFenceHeld) {
		t.Fatalf("raise while b's fence is locked exclusively: %v, want it to give up (ErrFenceHeld)", err)
	}
	if err := s.RaiseAll(ctx, jobs[:1], token); err != nil {
		t.Fatalf("raise of a alone while b's fence is locked: %v, want it raised", err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(`+key+`)`); err != nil {
		t.Fatal(err)
	}
	if err := s.RaiseAll(ctx, jobs, token); err != nil {
		t.Fatalf("raise once the lock is let go: %v", err)
	}
}
