package fence

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

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
	return jobSetupOn(t, testenv.MustDatabase(t))
}

// jobSetupOn is mustJobSetup on the fresh database of dsn.
func jobSetupOn(t *testing.T, dsn string) jobSetup {
	t.Helper()
	owner := mustOpen(t, Config{DSN: dsn})
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
	return js.list(t, ctx, "sku", "stock_scans")
}

// list returns the values of column in table (or view), in order, comma-separated.
func (js jobSetup) list(t *testing.T, ctx context.Context, column, table string) string {
	t.Helper()
	var s string
	if err := js.pool.QueryRow(ctx, `SELECT coalesce(string_agg(`+column+`, ',' ORDER BY `+column+`), '') FROM `+table).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPostgres_FencedStatementsEndedTransaction: a text that ends the fenced transaction and
// opens another one (COMMIT AND CHAIN, ROLLBACK AND CHAIN, COMMIT; BEGIN) fails the run, as a
// bare COMMIT does, and what it wrote in the new transaction is not committed. It succeeded
// before, its run reported the rows of a transaction rolled back, or ran outside the fence. A
// text that fails with a serialization failure after its COMMIT is not run again by the store,
// which committed what ran before the COMMIT once per attempt before.
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
		// A serialization failure or deadlock after the COMMIT does not have the store run the
		// text again: what ran before it would commit once more with each run.
		{"CommitThenSerializationFailure", ins("i") + `; COMMIT; DO $$ BEGIN RAISE EXCEPTION 'again' USING ERRCODE = '40001'; END $$`, "i"},
		{"CommitBeginThenDeadlock", ins("j") + `; COMMIT; BEGIN; DO $$ BEGIN RAISE EXCEPTION 'again' USING ERRCODE = '40P01'; END $$`, "j"},
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

// TestPostgres_FencedStatementsCopyFromStdin: COPY ... FROM STDIN in a text fails at once,
// naming the reason, instead of waiting for data until the run's timeout.
func TestPostgres_FencedStatementsCopyFromStdin(t *testing.T) {
	js := mustJobSetup(t)
	ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Second)
	defer cancel()
	_, err := js.jobs.FencedStatements(ctx, "job", 10, js.role, `INSERT INTO stock_scans (sku, quantity) VALUES ('a', 1); COPY stock_scans (sku, quantity) FROM STDIN`)
	if ctx.Err() != nil || sqlState(err) != "57014" || !strings.Contains(err.Error(), "COPY FROM STDIN") {
		t.Fatalf("COPY FROM STDIN: err %v (context %v), want it refused with 57014 and the reason", err, ctx.Err())
	}
	if got := js.skus(t, ctx); got != "" {
		t.Fatalf("skus %q after the refused text, want none", got)
	}
	// COPY TO STDOUT is read and dropped like any other result.
	if n, err := js.jobs.FencedStatements(ctx, "job", 10, js.role, `COPY (SELECT 1) TO STDOUT; INSERT INTO stock_scans (sku, quantity) VALUES ('b', 1)`); err != nil || n != 1 {
		t.Fatalf("COPY TO STDOUT: %d rows, err %v; want 1 row", n, err)
	}
}

// TestPostgres_FencedStatementsCancelledAtServer: a run whose context ends while the text's
// statement runs (its timeout, the end of the term) cancels the statement at the server (pgx
// sends a cancel request as it closes a connection whose context ended), even one that set
// statement_timeout to 0: the backend does not go on holding the fence's shared lock, which a
// new leader's raise waits for, nor a connection slot.
func TestPostgres_FencedStatementsCancelledAtServer(t *testing.T) {
	js := mustJobSetup(t)
	ctx := testCtx(t)
	runCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := js.jobs.FencedStatements(runCtx, "job", 10, js.role, `SET statement_timeout = 0; SELECT pg_sleep(3600)`)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the run's deadline", err)
	}
	testenv.Eventually(t, 20*time.Second, 50*time.Millisecond, "the text's statement to end at the server", func() bool {
		var n int
		if err := js.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE '%pg_sleep(3600)%' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	if err := js.owner.RaiseAll(ctx, []string{"job"}, 20); err != nil {
		t.Fatalf("the next leader's raise: %v", err)
	}
}

// TestPostgres_FencedStatementsLargeResult: the rows a text returns are read one at a time and
// dropped, not held: a text returning far more than the daemon should hold does not grow its
// heap by that much. Before, every row was kept until the text ended.
func TestPostgres_FencedStatementsLargeResult(t *testing.T) {
	js := mustJobSetup(t)
	ctx := testCtx(t)
	const rows, size = 40, 10 << 20 // the text returns this many rows of this many bytes
	var (
		stop = make(chan struct{})
		wg   sync.WaitGroup
		peak uint64
		ms   runtime.MemStats
	)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	n, err := js.jobs.FencedStatements(ctx, "job", 10, js.role,
		`SELECT repeat('x', 10485760) FROM generate_series(1, 40); INSERT INTO stock_scans (sku, quantity) VALUES ('a', 1)`)
	close(stop)
	wg.Wait()
	if err != nil || n != 1 {
		t.Fatalf("%d rows, err %v; want 1 row", n, err)
	}
	if grown := peak - min(peak, base); grown > rows*size/2 {
		t.Fatalf("the heap grew by %d MiB for a text returning %d MiB, want well below", grown>>20, rows*size>>20)
	}
}

// TestPostgres_FencedStatementsSearchPath: the check before the commit runs the scheduler's
// own functions and operators, whatever search_path and functions the text left behind (here
// on the store's own connection, whose role may create a schema).
func TestPostgres_FencedStatementsSearchPath(t *testing.T) {
	s, _ := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	n, err := s.FencedStatements(ctx, "job", 10, "", `
		CREATE SCHEMA shadow;
		CREATE FUNCTION shadow.pg_advisory_xact_lock_shared(bigint) RETURNS void LANGUAGE plpgsql
			AS $$ BEGIN RAISE EXCEPTION 'the text''s own function ran'; END $$;
		CREATE FUNCTION shadow.eq(bigint, bigint) RETURNS boolean LANGUAGE plpgsql
			AS $$ BEGIN RAISE EXCEPTION 'the text''s own operator ran'; END $$;
		CREATE OPERATOR shadow.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = shadow.eq);
		CREATE FUNCTION shadow.txid_current() RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint';
		SET LOCAL search_path = shadow, pg_catalog;
		INSERT INTO public.stock_scans (sku, quantity) VALUES ('a', 1)`)
	if err != nil || n != 1 {
		t.Fatalf("%d rows, err %v; want 1 row and the scheduler's own check", n, err)
	}
}

// TestPostgres_FencedStatementsLargeRow: a row (or a notice) larger than a text may return at
// once fails the run, naming the bound, instead of being read whole into the daemon's memory;
// rows below it pass.
func TestPostgres_FencedStatementsLargeRow(t *testing.T) {
	js := mustJobSetup(t)
	ctx := testCtx(t)
	for _, text := range []string{
		`SELECT repeat('x', 100 << 20)`,
		`DO $$ BEGIN RAISE NOTICE '%', repeat('x', 100 << 20); END $$`,
	} {
		_, err := js.jobs.FencedStatements(ctx, "job", 10, js.role, text)
		if err == nil || !strings.Contains(err.Error(), "a sql job's text may return at once") {
			t.Fatalf("%s: err %v, want the bound named", text, err)
		}
	}
	if _, err := js.jobs.FencedStatements(ctx, "job", 10, js.role, `SELECT repeat('x', 10 << 20)`); err != nil {
		t.Fatalf("a row of 10 MiB: %v", err)
	}
}

// TestPostgres_FencedStatementsLongError: the error a text raises, which the runner logs, is
// clipped: a RAISE EXCEPTION of a megabyte does not write a megabyte into the daemon's log with
// each run. Its SQLSTATE is kept.
func TestPostgres_FencedStatementsLongError(t *testing.T) {
	js := mustJobSetup(t)
	ctx := testCtx(t)
	_, err := js.jobs.FencedStatements(ctx, "job", 10, js.role,
		`DO $$ BEGIN RAISE EXCEPTION '%', repeat('é', 1 << 19) USING DETAIL = repeat('d', 1 << 20), ERRCODE = 'P0042'; END $$`)
	if sqlState(err) != "P0042" || len(err.Error()) > 8<<10 || !strings.Contains(err.Error(), "bytes omitted") {
		t.Fatalf("err of %d bytes with SQLSTATE %q, want P0042 and at most 8 KiB", len(err.Error()), sqlState(err))
	}
}
