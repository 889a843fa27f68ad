package fence

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"scheduler"
	"scheduler/internal/fence/internal/verdict"
	"scheduler/internal/testenv"
)

// preparedJobSetup is mustJobSetup on a server that allows prepared transactions.
func preparedJobSetup(t *testing.T) (jobSetup, string) {
	t.Helper()
	dsn := testenv.MustPostgres(t, "max_prepared_transactions=4").CreateDatabase(t)
	return jobSetupOn(t, dsn), dsn
}

// gids returns the gids of the server's prepared transactions.
func (js jobSetup) gids(t *testing.T, ctx context.Context) string {
	t.Helper()
	return js.list(t, ctx, "gid", "pg_prepared_xacts")
}

// rollbackPrepared rolls back, as the superuser, what the server holds prepared.
func (js jobSetup) rollbackPrepared(t *testing.T, ctx context.Context) {
	t.Helper()
	rows, err := js.pool.Query(ctx, `SELECT gid FROM pg_prepared_xacts`)
	if err != nil {
		t.Fatal(err)
	}
	gids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gids {
		if _, err := js.pool.Exec(ctx, `ROLLBACK PREPARED '`+strings.ReplaceAll(g, "'", "''")+`'`); err != nil {
			t.Fatal(err)
		}
	}
}

// freeFence checks that nothing holds job's fence any longer: no session is counted as
// holding it, and a new leader's raise to token goes through.
func (js jobSetup) freeFence(t *testing.T, ctx context.Context, token int64) {
	t.Helper()
	if held, err := js.owner.HeldFences(ctx, []string{"job"}, token); err != nil || len(held) != 0 {
		t.Fatalf("held=%v (err %v), want the job's fence free", held, err)
	}
	if err := js.owner.RaiseAll(ctx, []string{"job"}, token); err != nil {
		t.Fatalf("the next raise: %v", err)
	}
}

// awaitSleep returns once a session of the database is in pg_sleep, when asleep, or none is,
// when not; or once ctx ended.
func (js jobSetup) awaitSleep(ctx context.Context, asleep bool) {
	for ctx.Err() == nil {
		var n int
		if err := js.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event = 'PgSleep'`).Scan(&n); err == nil && (n > 0) == asleep {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPostgres_FencedStatementsPrepareTransaction: on a server that allows prepared
// transactions, a text that prepares the fenced transaction fails the run, and the store rolls
// the prepared transaction back before it answers (found by the fenced transaction's id, rolled
// back as its owner): nothing of it commits, it holds the job's fence no longer, and no role can
// COMMIT PREPARED it later. So on the store's own connection, with and without a role, and on
// the job connection, whose role may not roll back a job role's transaction before SET ROLE;
// whatever gid and session settings the text chose, whatever it ran after the PREPARE, and when
// the session breaks after it. Before, the prepared transaction stayed, with its writes and the
// job's fence. A transaction the text prepared after the fenced one ended is not the run's to
// tell from another session's: it is left, and the error counts it.
func TestPostgres_FencedStatementsPrepareTransaction(t *testing.T) {
	js, _ := preparedJobSetup(t)
	ctx := testCtx(t)
	ins := func(sku string) string {
		return `INSERT INTO stock_scans (sku, quantity) VALUES ('` + sku + `', 1)`
	}
	token := int64(10)
	long := `it's \ a "gid" é ` + strings.Repeat("x", 199-len(`it's \ a "gid" é `)) // the longest gid, in bytes
	for _, c := range []struct {
		name, text string
		endAsleep  bool   // the run's context ends while the text sleeps
		kept, left string // the skus the run committed, the gids it left prepared
		textErr    string // the text's error the run's names, if any
	}{
		{name: "Plain", text: ins("a") + `; PREPARE TRANSACTION 'g'`},
		{name: "LongOddGid", text: ins("a") + `; PREPARE TRANSACTION '` + strings.ReplaceAll(long, "'", "''") + `'`},
		// A client encoding whose characters may hold a backslash byte, and backslashes read
		// as escapes: the gid must be read and quoted back the way the server wrote it.
		{name: "SessionSettings", text: `SET client_encoding = 'SJIS'; SET standard_conforming_strings = off; SET search_path = nowhere, public; ` +
			ins("a") + `; PREPARE TRANSACTION E'ソ''\\'`},
		// The owner is the role current at PREPARE: the session's own after RESET ROLE, the
		// job's after a SET ROLE that outlives the transaction.
		{name: "ResetRole", text: ins("a") + `; RESET ROLE; PREPARE TRANSACTION 'g'`},
		{name: "SessionRole", text: `SET ROLE ` + js.role + `; ` + ins("a") + `; PREPARE TRANSACTION 'g'`},
		// Postgres refuses COMMIT PREPARED in a text of several statements.
		{name: "CommitPrepared", text: ins("a") + `; PREPARE TRANSACTION 'g'; COMMIT PREPARED 'g'`, textErr: "25001"},
		{name: "BeginAgain", text: ins("a") + `; PREPARE TRANSACTION 'g'; BEGIN; SET LOCAL ROLE ` + js.role + `; ` + ins("b")},
		{name: "ErrorAfter", text: ins("a") + `; PREPARE TRANSACTION 'g'; SELECT 1/0`, textErr: "22012"},
		// What ran after the PREPARE outside a transaction committed, unfenced, as after a
		// COMMIT; a serialization failure after it does not run the text again.
		{name: "NotRetried", text: ins("a") + `; PREPARE TRANSACTION 'g'; SET ROLE ` + js.role + `; ` + ins("b") +
			`; COMMIT; DO $$ BEGIN RAISE EXCEPTION 'again' USING ERRCODE = '40001'; END $$`, kept: "b", textErr: "40001"},
		{name: "SessionEnded", text: ins("a") + `; PREPARE TRANSACTION 'g'; SELECT pg_terminate_backend(pg_backend_pid())`},
		{name: "RunEnded", text: ins("a") + `; PREPARE TRANSACTION 'g'; SELECT pg_sleep(3600)`, endAsleep: true},
		// The second PREPARE prepares the implicit transaction the first one left the rest of
		// the text in.
		{name: "TwoPrepares", text: ins("a") + `; PREPARE TRANSACTION 'g'; PREPARE TRANSACTION 'h'`, left: "h"},
		{name: "PrepareBeginPrepare", text: ins("a") + `; PREPARE TRANSACTION 'g'; BEGIN; SET LOCAL ROLE ` + js.role + `; ` + ins("b") +
			`; PREPARE TRANSACTION 'h'`, left: "h"},
	} {
		for _, conn := range []struct {
			name  string
			store *Store
			role  string
		}{
			{"StoreConnection", js.owner, ""},
			{"StoreConnectionRole", js.owner, js.role},
			{"JobConnection", js.jobs, js.role},
		} {
			t.Run(c.name+"/"+conn.name, func(t *testing.T) {
				t.Cleanup(func() { js.rollbackPrepared(t, ctx) }) // so that a failure stays this case's
				before := js.skus(t, ctx)
				runCtx, cancel := context.WithCancel(ctx)
				defer cancel()
				if c.endAsleep {
					js.awaitSleep(ctx, false) // the last case's run, cancelled at the server
					go func() {
						defer cancel()
						js.awaitSleep(ctx, true)
					}()
				}
				n, err := conn.store.FencedStatements(runCtx, "job", token, conn.role, c.text)
				if !errors.Is(err, verdict.ErrTxEnded) || !strings.Contains(err.Error(), "which the scheduler rolled back") {
					t.Fatalf("%d rows, err %v; want ErrTxEnded saying that the prepared transaction was rolled back", n, err)
				}
				if c.textErr != "" && !strings.Contains(err.Error(), c.textErr) {
					t.Fatalf("err %v, want the text's error (%s) too", err, c.textErr)
				}
				if want := strings.Trim(before+","+c.kept, ","); js.skus(t, ctx) != want {
					t.Fatalf("skus %q after the run, want %q: nothing of the prepared transaction commits", js.skus(t, ctx), want)
				}
				if got := js.gids(t, ctx); got != c.left {
					t.Fatalf("prepared transactions %q after the run, want %q", got, c.left)
				}
				if c.left != "" {
					if !strings.Contains(err.Error(), "also prepared 1 transaction(s)") {
						t.Fatalf("err %v, want it to count the transaction the scheduler left", err)
					}
					js.rollbackPrepared(t, ctx)
				}
				token++
				js.freeFence(t, ctx, token)
			})
		}
	}
}

// TestPostgres_FencedStatementsPrepareTransactionRollbackFails: when the session breaks before
// the store has rolled back what a text prepared, and no new one can be had, the run's error
// says what is left and how to end it (by the fenced transaction's id, or by its gid once known),
// and the prepared transaction, holding the job's fence, makes a new leader hold the job back.
func TestPostgres_FencedStatementsPrepareTransactionRollbackFails(t *testing.T) {
	js, dsn := preparedJobSetup(t)
	ctx := testCtx(t)
	token := int64(10)
	for _, c := range []struct {
		name, text string
		cut        func(t *testing.T, p *testenv.Proxy) // cuts the session at the point tested
		says       string                               // what the error tells to do
	}{
		{name: "BeforeTheLookup", text: `INSERT INTO stock_scans (sku, quantity) VALUES ('a', 1); PREPARE TRANSACTION 'g'; SELECT pg_sleep(60)`,
			cut: func(t *testing.T, p *testenv.Proxy) {
				js.awaitSleep(ctx, true)
				p.Cut()
			},
			says: "SELECT gid, owner FROM pg_prepared_xacts WHERE transaction = '"},
		{name: "BeforeTheRollback", text: `INSERT INTO stock_scans (sku, quantity) VALUES ('a', 1); PREPARE TRANSACTION 'g'`,
			cut: func(t *testing.T, p *testenv.Proxy) {
				testenv.Eventually(t, 20*time.Second, 10*time.Millisecond, "the rollback to be held", func() bool {
					return !p.DelayedSince().IsZero()
				})
				p.Cut()
			},
			says: "until someone runs ROLLBACK PREPARED E'g'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxied, p := testenv.ProxiedDSN(t, dsn)
			s := mustOpen(t, Config{DSN: proxied})
			p.DelayFrom(time.Hour, func(b []byte) bool { return bytes.Contains(b, []byte("ROLLBACK PREPARED")) })
			done := make(chan error, 1)
			go func() {
				_, err := s.FencedStatements(ctx, "job", token, "", c.text)
				done <- err
			}()
			c.cut(t, p)
			err := <-done
			if !errors.Is(err, verdict.ErrTxEnded) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err %v, want ErrTxEnded saying %q", err, c.says)
			}
			token++
			if held, err := js.owner.HeldFences(ctx, []string{"job"}, token); err != nil || len(held) != 1 {
				t.Fatalf("held=%v (err %v) with the text's transaction prepared, want [job]", held, err)
			}
			if got := js.gids(t, ctx); got != "g" {
				t.Fatalf("prepared transactions %q, want the text's", got)
			}
			js.rollbackPrepared(t, ctx)
			if _, err := js.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event = 'PgSleep'`); err != nil {
				t.Fatal(err)
			}
			if got := js.skus(t, ctx); got != "" {
				t.Fatalf("skus %q, want none", got)
			}
			js.freeFence(t, ctx, token)
		})
	}
}

// TestSQLite_FencedStatementsPrepareTransaction: SQLite has no prepared transactions: a text
// with PREPARE TRANSACTION fails as any text that does not parse, and nothing of it commits.
func TestSQLite_FencedStatementsPrepareTransaction(t *testing.T) {
	s := mustOpen(t, Config{Path: filepath.Join(t.TempDir(), "scheduler.db")})
	ctx := testCtx(t)
	_, err := s.FencedStatements(ctx, "job", 10, "", `INSERT INTO stock_scans (sku, quantity) VALUES ('a', 1); PREPARE TRANSACTION 'g'`)
	if err == nil || !strings.Contains(err.Error(), "syntax error") || errors.Is(err, verdict.ErrTxEnded) {
		t.Fatalf("err %v, want a syntax error", err)
	}
	var n int
	if err := s.Fenced(ctx, "reader", 1, func(_ context.Context, tx scheduler.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM stock_scans`).Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d scans after the text, want none", n)
	}
}
