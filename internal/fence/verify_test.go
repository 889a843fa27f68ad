package fence

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"scheduler"
	"scheduler/internal/fence/internal/postgres"
	"scheduler/internal/testenv"
	"scheduler/migrations"
)

// jobRoleRecipe is the job-role recipe of the README, with {role} for the role.
var jobRoleRecipe = []string{
	`GRANT USAGE ON SCHEMA scheduler TO {role}`,
	`GRANT EXECUTE ON FUNCTION scheduler.fence_verify(text, bigint) TO {role}`,
	`GRANT INSERT ON public.invoices TO {role}`,
}

// connectAs connects to dsn and closes the connection at the end of the test.
func connectAs(t *testing.T, ctx context.Context, dsn string) *pgx.Conn {
	t.Helper()
	conn := testenv.Connect(ctx, t, dsn)
	return conn
}

// sqlState returns the SQLSTATE of err, or "".
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// fenceRows counts the rows of job_fence.
func fenceRows(t *testing.T, ctx context.Context, s *Store) int {
	t.Helper()
	return pgCount(t, ctx, s, `SELECT count(*) FROM scheduler.job_fence`)
}

// TestPostgres_FenceVerify: a login role set up by the README's recipe checks its token with
// fence_verify, which passes only for the fence's own token, never raises or creates a fence,
// and holds the fence against a raise for as long as its transaction is open.
func TestPostgres_FenceVerify(t *testing.T) {
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	roleDSN := testenv.MustRole(t, dsn, "nightly_job", jobRoleRecipe...)
	if err := s.RaiseAll(ctx, []string{"nightly"}, 10); err != nil {
		t.Fatal(err)
	}
	conn := connectAs(t, ctx, roleDSN)

	t.Run("EqualTokenPasses", func(t *testing.T) {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		var fence int64
		if err := tx.QueryRow(ctx, `SELECT scheduler.fence_verify('nightly', 10)`).Scan(&fence); err != nil || fence != 10 {
			t.Fatalf("fence_verify(nightly, 10) = %d, %v; want 10", fence, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO public.invoices (client_id, month, amount, token) VALUES (1, 'v', 1, 10)`); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("OtherTokensRefused", func(t *testing.T) {
		rows := fenceRows(t, ctx, s)
		for _, c := range []struct {
			job   string
			token int64
		}{{"nightly", 9000000000000}, {"nightly", 9}, {"any_job", 9000000000000}, {"any_job", 1}} {
			_, err := conn.Exec(ctx, `SELECT scheduler.fence_verify($1, $2)`, c.job, c.token)
			if got := sqlState(err); got != StaleErrorCode {
				t.Errorf("fence_verify(%s, %d): err %v, want SQLSTATE %s", c.job, c.token, err, StaleErrorCode)
			}
		}
		f, err := s.Fences(ctx, "nightly", "any_job")
		if err != nil || len(f) != 1 || f["nightly"] != 10 {
			t.Fatalf("fences after the refused checks = %v (err %v), want only nightly at 10", f, err)
		}
		if n := fenceRows(t, ctx, s); n != rows {
			t.Fatalf("job_fence has %d rows after the refused checks, had %d", n, rows)
		}
	})
	t.Run("NullRefused", func(t *testing.T) {
		// A script whose token or job name came out NULL must not pass the check: a STRICT
		// function would return NULL without checking anything.
		for _, sql := range []string{
			`SELECT scheduler.fence_verify('nightly', NULL)`,
			`SELECT scheduler.fence_verify(NULL, 10)`,
			`SELECT scheduler.fence_verify(NULL, NULL)`,
		} {
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, sql); sqlState(err) != StaleErrorCode {
				t.Errorf("%s: err %v, want SQLSTATE %s", sql, err, StaleErrorCode)
			}
			_ = tx.Rollback(ctx)
		}
	})
	t.Run("RaisingFunctionsDenied", func(t *testing.T) {
		for _, sql := range []string{
			`SELECT scheduler.fence_check('nightly', 9000000000000)`,
			`SELECT scheduler.fence_check('not_a_job', 1)`,
			`SELECT scheduler.fence_check_all(ARRAY['nightly'], 9000000000000)`,
			`SELECT * FROM scheduler.fence_raise(ARRAY['nightly'], 9000000000000)`,
			`UPDATE scheduler.job_fence SET token = 1 WHERE job = 'nightly'`,
			`INSERT INTO scheduler.job_fence (job, token) VALUES ('not_a_job', 1)`,
			`SELECT scheduler.fence_admin_reset('nightly')`,
		} {
			if _, err := conn.Exec(ctx, sql); sqlState(err) != "42501" {
				t.Errorf("%s: err %v, want permission denied (42501)", sql, err)
			}
		}
		if f, err := s.Fences(ctx); err != nil || len(f) != 1 || f["nightly"] != 10 {
			t.Fatalf("fences after the denied calls = %v (err %v), want only nightly at 10", f, err)
		}
	})
	t.Run("OpenCheckBlocksRaise", func(t *testing.T) {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, `SELECT scheduler.fence_verify('nightly', 10)`); err != nil {
			t.Fatal(err)
		}
		base, err := lockWaiters(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		raised, done := inBackground(func() error { return s.RaiseAll(ctx, []string{"nightly"}, 20) })
		blocked, err := awaitBlocked(ctx, s, base, done)
		if err != nil {
			t.Fatal(err)
		}
		if !blocked {
			t.Fatalf("the raise returned (err %v) while a transaction that checked token 10 was open", <-raised)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatalf("commit of the checked transaction: %v", err)
		}
		raiseErr := <-raised
		if f, err := s.Fences(ctx, "nightly"); raiseErr != nil || err != nil || f["nightly"] != 20 {
			t.Fatalf("raise after the commit: err %v; fence %v (err %v), want 20", raiseErr, f, err)
		}
	})
	t.Run("CheckDuringRaiseWaitsAndIsRefused", func(t *testing.T) {
		if err := ensureProbe(ctx, s); err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		held, err := untilEntered(func(entered func()) error {
			return holdRaise(s)(ctx, "nightly", 30, entered, release)
		})
		if err != nil {
			t.Fatalf("raise to 30: %v", err)
		}
		base, err := lockWaiters(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		checked, done := inBackground(func() error {
			_, err := conn.Exec(ctx, `SELECT scheduler.fence_verify('nightly', 20)`)
			return err
		})
		blocked, err := awaitBlocked(ctx, s, base, done)
		close(release)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-held; err != nil {
			t.Fatalf("raise to 30: %v", err)
		}
		checkErr := <-checked
		if !blocked || sqlState(checkErr) != StaleErrorCode {
			t.Fatalf("check of token 20 during the raise to 30: blocked %v, err %v; want it to wait and get %s", blocked, checkErr, StaleErrorCode)
		}
	})
}

// TestPostgres_FenceVerifyRepeatableRead: under REPEATABLE READ a check whose snapshot predates a
// raise fails (40001 or JF001) instead of passing on the old fence.
func TestPostgres_FenceVerifyRepeatableRead(t *testing.T) {
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	conn := connectAs(t, ctx, testenv.MustRole(t, dsn, "nightly_job", jobRoleRecipe...))
	if err := s.RaiseAll(ctx, []string{"nightly"}, 10); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT scheduler.fence_verify('nightly', 10)`); err != nil {
		t.Fatalf("check of the current token under REPEATABLE READ: %v", err)
	}
	_ = tx.Rollback(ctx)
	tx, err = conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT scheduler.fence_verify('other', 1)`); sqlState(err) != StaleErrorCode {
		t.Fatalf("check of a job without a fence: err %v, want %s", err, StaleErrorCode)
	}
	_ = tx.Rollback(ctx)
	tx, err = conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT now()`); err != nil { // takes the snapshot
		t.Fatal(err)
	}
	if err := s.RaiseAll(ctx, []string{"nightly"}, 20); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, `SELECT scheduler.fence_verify('nightly', 10)`)
	if got := sqlState(err); got != "40001" && got != StaleErrorCode {
		t.Fatalf("check of token 10 under REPEATABLE READ after a raise to 20: err %v, want 40001 or %s", err, StaleErrorCode)
	}
}

// migrateTo applies the Postgres migrations up to version, as an older release did.
func migrateTo(t *testing.T, s *Store, version int64) {
	t.Helper()
	p := s.b.(*postgres.Backend)
	ctx := testCtx(t)
	if _, err := p.Pool().Exec(ctx, `CREATE SCHEMA IF NOT EXISTS scheduler`); err != nil {
		t.Fatal(err)
	}
	fsys, err := migrations.PostgresIn(p.Schema())
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDBFromPool(p.Pool())
	defer func() { _ = db.Close() }()
	prov, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithTableName(p.Schema()+"."+migrations.VersionTable), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prov.UpTo(ctx, version); err != nil {
		t.Fatalf("migrate to %d: %v", version, err)
	}
}

// TestPostgres_MigrateRevokesRaisingFunctions: on a store migrated by an older release, with job
// roles set up by the older recipe (EXECUTE on fence_check) and other grants of the raising
// functions, `migrate` leaves them to the owner alone: the roles get permission denied, the
// former fence_check grantee can check with fence_verify, and the scheduler's own role still
// enters and raises fences.
func TestPostgres_MigrateRevokesRaisingFunctions(t *testing.T) {
	dsn := testenv.MustDatabase(t)
	s := openRaw(t, Config{DSN: dsn})
	ctx := testCtx(t)
	migrateTo(t, s, 4)
	oldRecipe := testenv.MustRole(t, dsn, "old_job",
		`GRANT USAGE ON SCHEMA scheduler TO {role}`,
		`GRANT EXECUTE ON FUNCTION scheduler.fence_check(text, bigint) TO {role}`)
	other := testenv.MustRole(t, dsn, "other_job",
		`GRANT USAGE ON SCHEMA scheduler TO {role}`,
		`GRANT EXECUTE ON FUNCTION scheduler.fence_check_all(text[], bigint), scheduler.fence_raise(text[], bigint) TO {role} WITH GRANT OPTION`)
	pgExec(t, ctx, dsn, `GRANT EXECUTE ON FUNCTION scheduler.fence_check(text, bigint) TO PUBLIC`)
	// A grant made by a grantee with the grant option, not by the owner.
	third := testenv.MustRole(t, dsn, "third_job", `GRANT USAGE ON SCHEMA scheduler TO {role}`)
	pgExec(t, ctx, dsn, `SET ROLE `+pgx.Identifier{testenv.RoleName(other)}.Sanitize()+`;
		GRANT EXECUTE ON FUNCTION scheduler.fence_raise(text[], bigint) TO `+pgx.Identifier{testenv.RoleName(third)}.Sanitize())

	old := connectAs(t, ctx, oldRecipe)
	if _, err := old.Exec(ctx, `SELECT scheduler.fence_check('any_job', 9000000000000)`); err != nil {
		t.Fatalf("before the migration the old recipe may raise (the hole closed here): %v", err)
	}
	pgExec(t, ctx, dsn, `DELETE FROM scheduler.job_fence`)

	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	calls := []string{
		`SELECT scheduler.fence_check('any_job', 9000000000000)`,
		`SELECT scheduler.fence_check_all(ARRAY['any_job'], 9000000000000)`,
		`SELECT * FROM scheduler.fence_raise(ARRAY['any_job'], 9000000000000)`,
	}
	for _, roleDSN := range []string{oldRecipe, other, third} {
		conn := connectAs(t, ctx, roleDSN)
		for _, sql := range calls {
			if _, err := conn.Exec(ctx, sql); sqlState(err) != "42501" {
				t.Errorf("%s after migrate: %s: err %v, want permission denied (42501)", testenv.RoleName(roleDSN), sql, err)
			}
		}
	}
	if f, err := s.Fences(ctx); err != nil || len(f) != 0 {
		t.Fatalf("fences after the denied calls = %v (err %v), want none", f, err)
	}

	// The scheduler's own role: raises, enters with the lock and the gate, and batches.
	if err := s.RaiseAll(ctx, []string{"nightly"}, 10); err != nil {
		t.Fatalf("owner's raise after migrate: %v", err)
	}
	if err := s.Fenced(ctx, "nightly", 10, func(context.Context, scheduler.Tx) error { return nil }); err != nil {
		t.Fatalf("owner's fenced write after migrate: %v", err)
	}
	if _, err := s.b.(*postgres.Backend).Pool().Exec(ctx, `SELECT scheduler.fence_check_all(ARRAY['nightly'], 10)`); err != nil {
		t.Fatalf("owner's fence_check_all after migrate: %v", err)
	}
	// The former fence_check grantee only changes the function its scripts call.
	var fence int64
	if err := old.QueryRow(ctx, `SELECT scheduler.fence_verify('nightly', 10)`).Scan(&fence); err != nil || fence != 10 {
		t.Fatalf("old recipe's role: fence_verify = %d, %v; want 10", fence, err)
	}
	if _, err := connectAs(t, ctx, other).Exec(ctx, `SELECT scheduler.fence_verify('nightly', 10)`); sqlState(err) != "42501" {
		t.Fatalf("a role that never had fence_check: fence_verify err %v, want 42501", err)
	}
	// Migrating again finds nothing to do.
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.b.(*postgres.Backend).VerifySQL(), "fence_verify") {
		t.Fatal("the store does not know fence_verify")
	}
}
