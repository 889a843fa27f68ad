package fence

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"scheduler/internal/fence/internal/postgres"
	"scheduler/internal/fence/internal/verdict"
	"scheduler/internal/testenv"
)

// jobSetup is the README's recommended setup for sql jobs on a fresh store: a NOINHERIT job
// connection with fence_verify only, and a job role granted to it that may write stock_scans.
type jobSetup struct {
	owner *Store        // the store on its own role
	jobs  *Store        // the store with the job connection
	pool  *pgxpool.Pool // the owner's pool, to look at the server
	role  string        // the job's role
}

func mustJobSetup(t *testing.T) jobSetup {
	t.Helper()
	owner, dsn := mustPostgresStore(t, Config{})
	jobDSN := testenv.MustRole(t, dsn, "scheduler_jobs",
		`ALTER ROLE {role} NOINHERIT`,
		`GRANT USAGE ON SCHEMA scheduler TO {role}`,
		`GRANT EXECUTE ON FUNCTION scheduler.fence_verify(text, bigint) TO {role}`)
	role := testenv.RoleName(testenv.MustRole(t, dsn, "nightly_job",
		`GRANT INSERT, SELECT ON public.stock_scans TO {role}`,
		`GRANT {role} TO `+pgx.Identifier{testenv.RoleName(jobDSN)}.Sanitize()))
	return jobSetup{
		owner: owner,
		jobs:  mustOpen(t, Config{DSN: dsn, JobDSN: jobDSN}),
		pool:  owner.b.(*postgres.Backend).Pool(),
		role:  role,
	}
}

// skus returns the skus of stock_scans.
func (js jobSetup) skus(t *testing.T, ctx context.Context) string {
	t.Helper()
	var s string
	if err := js.pool.QueryRow(ctx, `SELECT coalesce(string_agg(sku, ',' ORDER BY sku), '') FROM stock_scans`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPostgres_FencedStatementsEndedTransaction: a text that ends the fenced transaction and
// opens another one (COMMIT AND CHAIN, ROLLBACK AND CHAIN, COMMIT; BEGIN) fails the run, as a
// bare COMMIT does, and what it wrote in the new transaction is not committed. It succeeded
// before, its run reported the rows of a transaction rolled back, or ran outside the fence.
func TestPostgres_FencedStatementsEndedTransaction(t *testing.T) {
	js := mustJobSetup(t)
	ctx := testCtx(t)
	ins := func(sku string) string {
		return `INSERT INTO stock_scans (sku, quantity) VALUES ('` + sku + `', 1)`
	}
	setRole := `SET LOCAL ROLE ` + js.role
	for _, c := range []struct{ name, text, kept string }{
		{"CommitAndChain", ins("a") + `; COMMIT AND CHAIN; ` + setRole + `; ` + ins("b"), "a"},
		{"RollbackAndChain", ins("c") + `; ROLLBACK AND CHAIN; ` + setRole + `; ` + ins("d"), ""},
		{"CommitThenBegin", ins("e") + `; COMMIT; BEGIN; ` + setRole + `; ` + ins("f"), "e"},
		{"EndThenStartTransaction", ins("g") + `; END; START TRANSACTION; ` + setRole + `; ` + ins("h"), "g"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := js.skus(t, ctx)
			n, err := js.jobs.FencedStatements(ctx, "job", 10, js.role, c.text)
			if !errors.Is(err, verdict.ErrTxEnded) {
				t.Fatalf("%s: %d rows, err %v; want %v", c.text, n, err, verdict.ErrTxEnded)
			}
			want := strings.Trim(before+","+c.kept, ",")
			if got := js.skus(t, ctx); got != want {
				t.Fatalf("skus %q after the run, want %q: only what ran before the text's COMMIT stays", got, want)
			}
		})
	}
}

// TestPostgres_FencedStatementsSearchPath: the check before the commit runs the scheduler's
// own functions with the session's own settings, whatever search_path, timeouts or functions
// the text left behind (here on the store's own connection, whose role may create a schema).
func TestPostgres_FencedStatementsSearchPath(t *testing.T) {
	s, _ := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	n, err := s.FencedStatements(ctx, "job", 10, "", `
		CREATE SCHEMA shadow;
		CREATE FUNCTION shadow.pg_advisory_xact_lock_shared(bigint) RETURNS void LANGUAGE plpgsql
			AS $$ BEGIN RAISE EXCEPTION 'the text''s own function ran'; END $$;
		CREATE FUNCTION shadow.txid_current() RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint';
		SET LOCAL search_path = shadow, pg_catalog;
		SET idle_in_transaction_session_timeout = 0;
		INSERT INTO public.stock_scans (sku, quantity) VALUES ('a', 1)`)
	if err != nil || n != 1 {
		t.Fatalf("%d rows, err %v; want 1 row and the scheduler's own check", n, err)
	}
}
