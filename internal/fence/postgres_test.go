package fence

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"scheduler"
	"scheduler/internal/fence/internal/postgres"
	"scheduler/internal/testenv"
)

// mustPostgresStore opens a migrated store on a fresh database and returns
// it with the database's DSN.
func mustPostgresStore(t *testing.T, cfg Config) (*Store, string) {
	t.Helper()
	cfg.DSN = testenv.MustDatabase(t)
	return mustOpen(t, cfg), cfg.DSN
}

// TestPostgres_StaleSQLState checks the SQL interface: fence_check and
// fence_verify raise the documented SQLSTATE, and the contract's psql
// invocation, with fence_verify, writes nothing and exits non-zero for a
// stale token.
func TestPostgres_StaleSQLState(t *testing.T) {
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	if err := s.RaiseAll(ctx, []string{"nightly"}, 500); err != nil {
		t.Fatal(err)
	}
	_, err := s.b.(*postgres.Backend).Pool().Exec(ctx, `SELECT scheduler.fence_check('nightly', 400)`)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != StaleErrorCode || !strings.Contains(pe.Message, "fenced out") {
		t.Fatalf("fence_check with a stale token: err %v, want SQLSTATE %s", err, StaleErrorCode)
	}

	script := writeFile(t, "job.sql", `SELECT scheduler.fence_verify('nightly', :'tok'::bigint);
INSERT INTO public.invoices (client_id, month, amount, token) VALUES (1, '2026-03', 12.50, :'tok'::bigint);
`)
	out, code := runPsql(t, ctx, dsn, script, "400")
	if code != 3 || !strings.Contains(out, StaleErrorCode) {
		t.Fatalf("psql with stale token 400: exit %d, output %q; want 3 (error with ON_ERROR_STOP) and SQLSTATE %s", code, out, StaleErrorCode)
	}
	if n := countInvoices(t, ctx, s); n != 0 {
		t.Fatalf("stale script wrote %d invoices, want 0", n)
	}
	if out, code := runPsql(t, ctx, dsn, script, "500"); code != 0 {
		t.Fatalf("psql with current token 500: exit %d, output %q", code, out)
	}
	if n := countInvoices(t, ctx, s); n != 1 {
		t.Fatalf("current-token script wrote %d invoices, want 1", n)
	}
}

func countInvoices(t *testing.T, ctx context.Context, s *Store) int {
	t.Helper()
	return pgCount(t, ctx, s, `SELECT count(*) FROM public.invoices`)
}

// TestPostgres_JobRole checks that a role granted only EXECUTE on the
// check-only fence function and fence_current can check a fence but not
// raise or lower it.
func TestPostgres_JobRole(t *testing.T) {
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	role := fmt.Sprintf("job_role_%d", time.Now().UnixNano())
	r := pgx.Identifier{role}.Sanitize()
	pgExec(t, ctx, dsn, `CREATE ROLE `+r+` NOLOGIN`)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pgExec(t, ctx, dsn, `DROP OWNED BY `+r)
		pgExec(t, ctx, dsn, `DROP ROLE `+r)
	})
	pgExec(t, ctx, dsn, `GRANT USAGE ON SCHEMA scheduler TO `+r)
	pgExec(t, ctx, dsn, `GRANT EXECUTE ON FUNCTION scheduler.fence_verify(text, bigint), scheduler.fence_current(text) TO `+r)
	if err := s.RaiseAll(ctx, []string{"nightly"}, 10); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, `SET ROLE `+r); err != nil {
		t.Fatal(err)
	}
	var fence int64
	if err := conn.QueryRow(ctx, `SELECT scheduler.fence_verify('nightly', 10)`).Scan(&fence); err != nil || fence != 10 {
		t.Fatalf("job role fence_verify: %d, %v", fence, err)
	}
	for _, sql := range []string{
		`SELECT scheduler.fence_check('nightly', 11)`,
		`UPDATE scheduler.job_fence SET token = 1 WHERE job = 'nightly'`,
		`DELETE FROM scheduler.job_fence`,
		`SELECT scheduler.fence_admin_reset('nightly')`,
		`SELECT scheduler.fence_raise(ARRAY['nightly'], 1)`,
	} {
		_, err := conn.Exec(ctx, sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("job role: %s: err %v, want permission denied (42501)", sql, err)
		}
	}
	if f, err := s.Fences(ctx, "nightly"); err != nil || f["nightly"] != 10 {
		t.Fatalf("fence after the job role's attempts = %v (err %v), want 10", f, err)
	}
}

// TestPostgres_RepeatableReadFailsClosed: a transaction whose snapshot
// predates a raise cannot pass the fence under REPEATABLE READ; it fails
// with a serialization error (to be retried) instead.
func TestPostgres_RepeatableReadFailsClosed(t *testing.T) {
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	if err := s.RaiseAll(ctx, []string{"nightly"}, 10); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []int64{10, 20} {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT count(*) FROM scheduler.runs`); err != nil { // takes the snapshot
			t.Fatal(err)
		}
		if err := s.RaiseAll(ctx, []string{"nightly"}, 30+tok); err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx, `SELECT scheduler.fence_check('nightly', $1)`, tok)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || (pe.Code != "40001" && pe.Code != StaleErrorCode) {
			t.Errorf("fence_check(%d) under REPEATABLE READ after a raise: err %v, want 40001 or %s", tok, err, StaleErrorCode)
		}
		_ = tx.Rollback(ctx)
		_ = conn.Close(ctx)
	}
}

// TestPostgres_RaiseTimeout: a raise behind a writer that does not finish
// gives up after RaiseTimeout with ErrRaiseTimeout and changes nothing.
func TestPostgres_RaiseTimeout(t *testing.T) {
	s, dsn := mustPostgresStore(t, Config{})
	impatient := mustOpen(t, Config{DSN: dsn, RaiseTimeout: 200 * time.Millisecond})
	ctx := testCtx(t)
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Fenced(ctx, "nightly", 10, func(_ context.Context, tx scheduler.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT 1`); err != nil { // enters the fence
				return err
			}
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	err := impatient.RaiseAll(ctx, []string{"nightly"}, 20)
	close(release)
	if !errors.Is(err, ErrRaiseTimeout) {
		t.Fatalf("raise behind a stuck writer: err %v, want ErrRaiseTimeout", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the writer after a timed-out raise: %v", err)
	}
	if f, _ := s.Fences(ctx, "nightly"); f["nightly"] != 10 {
		t.Fatalf("fence = %d after a timed-out raise, want 10", f["nightly"])
	}
	if err := impatient.RaiseAll(ctx, []string{"nightly"}, 20); err != nil {
		t.Fatalf("raise once the writer is gone: %v", err)
	}
}

// TestPostgres_IdleInTransactionTimeoutUnblocksRaise: a frozen old leader
// stuck inside a fenced transaction loses its session after
// idle_in_transaction_session_timeout, and the new leader's raise goes on.
func TestPostgres_IdleInTransactionTimeoutUnblocksRaise(t *testing.T) {
	s, dsn := mustPostgresStore(t, Config{})
	frozen := mustOpen(t, Config{DSN: dsn, IdleInTransactionTimeout: 300 * time.Millisecond})
	ctx := testCtx(t)
	if err := ensureProbe(ctx, s); err != nil {
		t.Fatal(err)
	}
	entered, thaw := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- frozen.Fenced(ctx, "nightly", 10, func(_ context.Context, tx scheduler.Tx) error {
			if err := insertProbe(ctx, tx, "nightly", 10, "zombie"); err != nil {
				return err
			}
			close(entered)
			<-thaw // frozen: the session sits idle in its transaction
			return insertProbe(ctx, tx, "nightly", 10, "zombie")
		})
	}()
	<-entered
	// Far longer than the idle timeout: only the server ending the session
	// can let the raise through.
	if err := s.RaiseAll(ctx, []string{"nightly"}, 20); err != nil {
		t.Fatalf("raise behind a frozen writer: %v", err)
	}
	close(thaw)
	if err := <-done; err == nil {
		t.Fatal("the frozen writer committed after its session was ended")
	}
	if n, err := probes(ctx, s, "nightly", 10, "zombie"); err != nil || n != 0 {
		t.Fatalf("zombie rows: %d (err %v), want 0", n, err)
	}
}

// TestPostgres_LedgerQueriesUseIndexes checks the plans of the history,
// status, catch-up and orphan queries on a ledger of some size.
func TestPostgres_LedgerQueriesUseIndexes(t *testing.T) {
	s, _ := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	p := s.b.(*postgres.Backend)
	if _, err := p.Pool().Exec(ctx, `INSERT INTO scheduler.runs (job, scheduled_at, status, token, node, attempt, started_at, finished_at)
		SELECT 'job' || (i % 50), timestamptz '2026-01-01' + i * interval '1 minute', 'succeeded', 1, 'n', 1, now(), now()
		FROM generate_series(1, 20000) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Pool().Exec(ctx, `ANALYZE scheduler.runs`); err != nil {
		t.Fatal(err)
	}
	from, to := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	reads := p.LedgerReads()
	for name, q := range map[string][]any{
		"history":  {reads["history"], "job7", 20},
		"window":   {reads["window"], []string{"job7"}, from, to},
		"lastOf":   {reads["lastOf"], []string{"job1", "job2"}},
		"lastAll":  {reads["lastAll"]},
		"orphans":  {reads["orphansAll"]},
		"orphans2": {reads["orphansOf"], []string{"job1"}},
	} {
		rows, err := p.Pool().Query(ctx, "EXPLAIN "+q[0].(string), q[1:]...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		if strings.Contains(text, "Seq Scan on runs") || !strings.Contains(text, "Index") {
			t.Errorf("%s does not use an index on runs:\n%s", name, text)
		}
	}
}

// TestPostgres_SchemasAreIndependent: two deployments in one database, each
// in its own schema, keep their own fences and ledgers.
func TestPostgres_SchemasAreIndependent(t *testing.T) {
	dsn := testenv.MustDatabase(t)
	a := mustOpen(t, Config{DSN: dsn, Schema: "tenant_a"})
	b := mustOpen(t, Config{DSN: dsn, Schema: "tenant_b"})
	ctx := testCtx(t)
	if err := a.RaiseAll(ctx, []string{"nightly"}, 50); err != nil {
		t.Fatal(err)
	}
	if err := b.RaiseAll(ctx, []string{"nightly"}, 5); err != nil {
		t.Fatalf("raise in tenant_b below tenant_a's fence: %v", err)
	}
	var wg sync.WaitGroup
	for _, s := range []*Store{a, b} {
		wg.Go(func() {
			if _, err := s.Claim(ctx, map[*Store]int64{a: 50, b: 5}[s], "n", scheduler.SlotKey{Job: "nightly", At: time.Unix(0, 0)}); err != nil {
				t.Errorf("claim: %v", err)
			}
		})
	}
	wg.Wait()
	if err := a.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
}

// writeFile writes a file in the test's temporary directory.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runPsql runs script with the real psql the way the contract tells exec
// jobs to: ON_ERROR_STOP, one transaction, the token as a variable. It
// returns the output and the exit status.
func runPsql(t *testing.T, ctx context.Context, dsn, script, token string) (string, int) {
	t.Helper()
	cmd := osexec.CommandContext(ctx, "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction",
		"-v", "VERBOSITY=verbose", "-v", "tok="+token, "-f", script, dsn)
	return outputAndStatus(t, cmd)
}

// outputAndStatus runs cmd and returns its output and exit status; a
// command that cannot run fails the test.
func outputAndStatus(t *testing.T, cmd *osexec.Cmd) (string, int) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	var ee *osexec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("run %s: %v (%s)", cmd.Path, err, out)
	return "", -1
}
