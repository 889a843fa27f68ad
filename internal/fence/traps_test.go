package fence

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"scheduler"
	"scheduler/internal/fence/internal/postgres"
)

// withCheck returns a second store on dsn whose fenced transactions enter
// the fence with checkFunc (a schema-qualified function name with
// fence_check's signature) instead of the lock and read statements.
func withCheck(t *testing.T, dsn, checkFunc string) *Store {
	t.Helper()
	s := mustOpen(t, Config{DSN: dsn})
	s.b.(*postgres.Backend).EnterWith(`SELECT ` + checkFunc + `($1, $2)`)
	return s
}

// TestPostgres_Traps runs the ordering checks against variants of the fence
// that are known to be wrong, and expects each to be caught; a correct
// alternative design (row locks with FOR SHARE) is the control. This is
// what keeps the two documented traps from coming back unnoticed.
func TestPostgres_Traps(t *testing.T) {
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)

	// The real fence_check, made STABLE: its reads then use the snapshot of
	// the calling statement, taken before the lock wait.
	var def string
	if err := s.b.(*postgres.Backend).Pool().QueryRow(ctx,
		`SELECT pg_get_functiondef('scheduler.fence_check(text, bigint)'::regprocedure)`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	stable := strings.Replace(def, "FUNCTION scheduler.fence_check(", "FUNCTION mutant.stable_check(", 1)
	stable = strings.Replace(stable, "LANGUAGE plpgsql", "LANGUAGE plpgsql STABLE", 1)
	if stable == def || !strings.Contains(stable, "STABLE") {
		t.Fatalf("could not derive the STABLE variant from:\n%s", def)
	}
	// The row-lock design: raise with UPDATE, then lock the row until commit.
	rowLock := func(name, lock string) string {
		return fmt.Sprintf(`CREATE FUNCTION mutant.%s(p_job text, p_tok bigint) RETURNS bigint
			LANGUAGE plpgsql VOLATILE AS $$
			DECLARE cur bigint;
			BEGIN
				INSERT INTO scheduler.job_fence (job, token) VALUES (p_job, p_tok) ON CONFLICT (job) DO NOTHING;
				UPDATE scheduler.job_fence SET token = p_tok WHERE job = p_job AND token < p_tok;
				SELECT token INTO cur FROM scheduler.job_fence WHERE job = p_job %s;
				IF cur <> p_tok THEN
					RAISE EXCEPTION 'fenced out' USING ERRCODE = 'JF001',
						DETAIL = format('job=%%s token=%%s fence=%%s', p_job, p_tok, cur);
				END IF;
				RETURN cur;
			END $$`, name, lock)
	}
	pgExec(t, ctx, dsn, `CREATE SCHEMA mutant`)
	pgExec(t, ctx, dsn, stable)
	pgExec(t, ctx, dsn, rowLock("for_share", "FOR SHARE"))
	pgExec(t, ctx, dsn, rowLock("for_key_share", "FOR KEY SHARE"))

	t.Run("FenceCheckFunctionIsCorrect", func(t *testing.T) {
		// The SQL interface for scripts, as the writers and the raisers.
		v := withCheck(t, dsn, "scheduler.fence_check")
		if err := checkRaiseWaits(ctx, v, v, "e", 10, raiseByWrite(v, "e", 20)); err != nil {
			t.Fatalf("raise-waits check, raise by fence_check: %v", err)
		}
		if err := checkRaiseWaits(ctx, v, s, "f", 10, raiseAllTo(s, 20, "f")); err != nil {
			t.Fatalf("raise-waits check, raise by RaiseAll: %v", err)
		}
		if err := checkLateWriter(ctx, s, v, holdRaise(v), "g", 10, 20); err != nil {
			t.Fatalf("late-writer check: %v", err)
		}
	})
	t.Run("FenceVerifyFunctionIsCorrect", func(t *testing.T) {
		// The check-only function of job roles, as the writers; the store's
		// own role raises.
		v := withCheck(t, dsn, "scheduler.fence_verify")
		for _, job := range []string{"h", "i"} {
			if err := s.RaiseAll(ctx, []string{job}, 10); err != nil {
				t.Fatal(err)
			}
		}
		if err := checkRaiseWaits(ctx, v, s, "h", 10, raiseAllTo(s, 20, "h")); err != nil {
			t.Fatalf("raise-waits check: %v", err)
		}
		if err := checkLateWriter(ctx, s, v, holdRaise(s), "i", 10, 20); err != nil {
			t.Fatalf("late-writer check: %v", err)
		}
	})
	t.Run("ForShareRowLockIsCorrect", func(t *testing.T) {
		v := withCheck(t, dsn, "mutant.for_share")
		if err := checkRaiseWaits(ctx, v, v, "a", 10, raiseByWrite(v, "a", 20)); err != nil {
			t.Fatalf("raise-waits check: %v", err)
		}
		if err := checkLateWriter(ctx, s, v, holdRaise(v), "b", 10, 20); err != nil {
			t.Fatalf("late-writer check: %v", err)
		}
	})
	t.Run("ForKeyShareRaiseDoesNotWait", func(t *testing.T) {
		v := withCheck(t, dsn, "mutant.for_key_share")
		err := checkRaiseWaits(ctx, v, v, "c", 10, raiseByWrite(v, "c", 20))
		if err == nil || !strings.Contains(err.Error(), "did not wait") {
			t.Fatalf("raise-waits check of FOR KEY SHARE: err %v, want the raise caught not waiting", err)
		}
		t.Logf("caught: %v", err)
	})
	t.Run("StableFunctionAcceptsLateOlderWriter", func(t *testing.T) {
		v := withCheck(t, dsn, "mutant.stable_check")
		err := checkLateWriter(ctx, s, v, holdRaise(s), "d", 10, 20)
		if err == nil || !strings.Contains(err.Error(), "committed") {
			t.Fatalf("late-writer check of a STABLE fence_check: err %v, want the late writer caught committing", err)
		}
		t.Logf("caught: %v", err)
	})
	t.Run("RealFunctionIsVolatileSecurityDefiner", func(t *testing.T) {
		rows, err := s.b.(*postgres.Backend).Pool().Query(ctx, `SELECT p.proname, p.provolatile::text, p.prosecdef
			FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
			WHERE n.nspname = 'scheduler' AND p.proname IN ('fence_check', 'fence_check_all', 'fence_raise', 'fence_verify')`)
		if err != nil {
			t.Fatal(err)
		}
		var (
			name, vol string
			secdef    bool
			n         int
		)
		if _, err := pgx.ForEachRow(rows, []any{&name, &vol, &secdef}, func() error {
			n++
			if vol != "v" || !secdef {
				t.Errorf("%s: volatility %q security definer %v, want v and true", name, vol, secdef)
			}
			return nil
		}); err != nil || n != 4 {
			t.Fatalf("%d functions (err %v), want 4", n, err)
		}
	})
}

// raiseAllTo returns a raise of jobs to newer by RaiseAll.
func raiseAllTo(s *Store, newer int64, jobs ...string) func(context.Context) error {
	return func(ctx context.Context) error { return s.RaiseAll(ctx, jobs, newer) }
}

// raiseByWrite returns a raise done by a fenced write with the newer token.
func raiseByWrite(s *Store, job string, newer int64) func(context.Context) error {
	return func(ctx context.Context) error {
		return s.Fenced(ctx, job, newer, func(context.Context, scheduler.Tx) error { return nil })
	}
}
