package fence

import (
	"context"
	"errors"
	"strings"
	"testing"

	"scheduler"
	"scheduler/internal/fence/internal/verdict"
)

// forgedRefusal is a deferred trigger on a temporary table that raises the fence's SQLSTATE at
// the commit, with a DETAIL naming the job and fence of the text's choice.
func forgedRefusal(detail string) string {
	return `CREATE TEMP TABLE forged (x int);
CREATE FUNCTION pg_temp.forge() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'fenced out' USING ERRCODE = 'JF001', DETAIL = '` + detail + `'; END $$;
CREATE CONSTRAINT TRIGGER forge AFTER INSERT ON forged DEFERRABLE INITIALLY DEFERRED
	FOR EACH ROW EXECUTE FUNCTION pg_temp.forge();
INSERT INTO forged VALUES (1)`
}

// TestPostgres_FencedStatementsForgedRefusal: a sql job's text whose deferred trigger raises
// JF001, the fence's SQLSTATE, with a DETAIL naming a job and fence of its choice, fails its
// own run as a text's error does: the store does not report the token stale (which the runner
// takes for a newer leader, ending the term, or blocking the job the DETAIL names), and nothing
// the text wrote commits. Before, the JF001 came back from the COMMIT and its DETAIL was trusted: every leader that ran
// the job ended its own term.
func TestPostgres_FencedStatementsForgedRefusal(t *testing.T) {
	js := mustJobSetup(t)
	ctx := testCtx(t)
	for _, detail := range []string{"job=no-such-job token=10 fence=99", "job=job token=10 fence=99", "job=other token=10 fence=99"} {
		text := `INSERT INTO stock_scans (sku, quantity) VALUES ('forged', 1); ` + forgedRefusal(detail)
		n, err := js.jobs.FencedStatements(ctx, "job", 10, js.role, text)
		var fe *scheduler.FenceError
		if err == nil || errors.Is(err, scheduler.ErrFenced) || errors.As(err, &fe) || errors.Is(err, verdict.ErrTxEnded) {
			t.Fatalf("DETAIL %q: %d rows, err %v; want the text's own error, not a stale token", detail, n, err)
		}
		if sqlState(err) != verdict.StaleErrorCode || !strings.Contains(err.Error(), "raised at the commit") {
			t.Fatalf("DETAIL %q: err %v; want the trigger's JF001, said to be raised at the commit", detail, err)
		}
		if got := js.skus(t, ctx); got != "" {
			t.Fatalf("DETAIL %q: skus %q, want none: the failed text committed", detail, got)
		}
		if f, err := js.owner.Fences(ctx, "job"); err != nil || f["job"] != 10 {
			t.Fatalf("fence of job = %v, %v; want 10", f, err)
		}
	}
	// A later run of the same job is not refused: nothing was raised or blocked.
	if n, err := js.jobs.FencedStatements(ctx, "job", 10, js.role, `INSERT INTO stock_scans (sku, quantity) VALUES ('next', 1)`); err != nil || n != 1 {
		t.Fatalf("the next run: %d rows, err %v; want 1 row", n, err)
	}
}

// TestPostgres_FencedForgedRefusalAtCommit: a deferred trigger on a table a fenced transaction
// writes (the job's own tables, as a built-in job's are) that raises JF001 at the commit with a
// DETAIL of its choice fails that transaction with its own error; only a fence the store reads
// above the token makes a stale verdict.
func TestPostgres_FencedForgedRefusalAtCommit(t *testing.T) {
	js := mustJobSetup(t)
	ctx := testCtx(t)
	if _, err := js.pool.Exec(ctx, `CREATE TABLE app_rows (x int);
		CREATE FUNCTION public.app_forge() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'fenced out' USING ERRCODE = 'JF001', DETAIL = 'job=other token=10 fence=99'; END $$;
		CREATE CONSTRAINT TRIGGER app_forge AFTER INSERT ON app_rows DEFERRABLE INITIALLY DEFERRED
			FOR EACH ROW EXECUTE FUNCTION public.app_forge()`); err != nil {
		t.Fatal(err)
	}
	insert := func(ctx context.Context, tx scheduler.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO app_rows VALUES (1)`)
		return err
	}
	err := js.owner.Fenced(ctx, "job", 10, insert)
	if err == nil || errors.Is(err, scheduler.ErrFenced) || sqlState(err) != verdict.StaleErrorCode {
		t.Fatalf("Fenced = %v; want the trigger's JF001 as the transaction's own error, not a stale token", err)
	}
	// The same SQLSTATE at the commit with the fence really above the token by then (its row
	// written by hand while the transaction ran: an UPDATE takes no advisory lock) is the
	// fence's verdict.
	err = js.owner.Fenced(ctx, "job", 10, func(ctx context.Context, tx scheduler.Tx) error {
		if err := insert(ctx, tx); err != nil {
			return err
		}
		_, err := js.pool.Exec(ctx, `UPDATE scheduler.job_fence SET token = 99 WHERE job = 'job'`)
		return err
	})
	var fe *scheduler.FenceError
	if !errors.As(err, &fe) || fe.Job != "job" || fe.Fence != 99 {
		t.Fatalf("Fenced with the fence raised to 99 before its commit = %v, want job's fence 99 named", err)
	}
}

// TestPostgres_FencedStatementsTempTypeText: a text that ends the fenced transaction (COMMIT AND
// CHAIN) cannot hide it from the check before the commit with a temporary type named text,
// which an unqualified ::text would find before pg_catalog's, and a cast that turns any
// transaction id into the first transaction's.
func TestPostgres_FencedStatementsTempTypeText(t *testing.T) {
	js := mustJobSetup(t)
	ctx := testCtx(t)
	text := `SELECT pg_catalog.set_config('my.xid', pg_catalog.txid_current()::pg_catalog.text, false);
INSERT INTO stock_scans (sku, quantity) VALUES ('a', 1);
COMMIT AND CHAIN;
SET LOCAL ROLE ` + js.role + `;
DO $$ BEGIN
  EXECUTE pg_catalog.format('CREATE TYPE pg_temp.text AS ENUM (%L)', pg_catalog.current_setting('my.xid'));
  EXECUTE pg_catalog.format('CREATE FUNCTION pg_temp.spoof(bigint) RETURNS pg_temp.text LANGUAGE sql AS %L',
    pg_catalog.format('SELECT %L::pg_temp.text', pg_catalog.current_setting('my.xid')));
END $$;
CREATE CAST (bigint AS pg_temp.text) WITH FUNCTION pg_temp.spoof(bigint);
INSERT INTO stock_scans (sku, quantity) VALUES ('b', 1)`
	n, err := js.jobs.FencedStatements(ctx, "job", 10, js.role, text)
	if !errors.Is(err, verdict.ErrTxEnded) {
		t.Fatalf("%d rows, err %v; want %v", n, err, verdict.ErrTxEnded)
	}
	if got := js.skus(t, ctx); got != "a" {
		t.Fatalf("skus %q, want a: only what ran before the text's COMMIT stays", got)
	}
}
