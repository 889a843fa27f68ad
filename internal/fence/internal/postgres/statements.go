package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"scheduler"
	"scheduler/internal/fence/internal/verdict"
)

// dmlTag matches the command tags whose count is of rows written.
var dmlTag = regexp.MustCompile(`^(INSERT|UPDATE|DELETE|MERGE) `)

// Statements runs text, a sql job's, under role when it is set, in one
// transaction fenced with token for job, as fence.Store.FencedStatements
// documents, and returns the rows it wrote; a fence below token is raised
// with the store's own role (see raising).
func (p *Backend) Statements(ctx context.Context, job string, token int64, role, text string) (n int64, err error) {
	err = p.raising(ctx, job, token, func() (err error) {
		n, err = p.statementsOnce(ctx, job, token, role, text)
		return err
	})
	return n, err
}

func (p *Backend) statementsOnce(ctx context.Context, job string, token int64, role, text string) (int64, error) {
	conn, done, err := p.jobConn(ctx)
	if err != nil {
		return 0, err
	}
	defer done()

	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	if err := p.enterOn(ctx, tx, job, token); err != nil {
		return 0, err
	}
	// The text learns its job, token, slot and run secret from settings of the transaction, so
	// that it can call outbox_enqueue (and fence_verify) with them. A text that changes them
	// only hurts itself: the functions check what they are given against the fence and the run.
	// The transaction's id, taken now, is how the check before the commit knows that it is
	// still the transaction the fence was entered in: a text can end it and open another
	// (COMMIT AND CHAIN, COMMIT; BEGIN), but cannot give the new one this id.
	slot, manual := "", "false"
	if at, m, ok := scheduler.SlotFrom(ctx); ok {
		slot, manual = at.UTC().Format(time.RFC3339Nano), strconv.FormatBool(m)
	}
	var xid string
	if err := tx.QueryRow(ctx, `SELECT set_config('scheduler.job', $1, true), set_config('scheduler.token', $2, true),
		set_config('scheduler.slot', $3, true), set_config('scheduler.manual', $4, true),
		set_config('scheduler.run_secret', $5, true), pg_catalog.txid_current()::pg_catalog.text`,
		job, strconv.FormatInt(token, 10), slot, manual, scheduler.RunSecretFrom(ctx)).Scan(nil, nil, nil, nil, nil, &xid); err != nil {
		return 0, fmt.Errorf("set the job's settings: %w", err)
	}
	if role != "" {
		if _, err := tx.Exec(ctx, `SET LOCAL ROLE `+pgx.Identifier{role}.Sanitize()); err != nil {
			return 0, fmt.Errorf("set role %s: %w", role, err)
		}
	}
	out, err := runText(ctx, conn.PgConn(), text)
	if out.prepares > 0 || conn.PgConn().IsClosed() && mayPrepare(text) {
		return 0, unprepare(ctx, p.statementsPool(), conn.PgConn(), xid, out.prepares, err)
	}
	if err != nil && out.committed {
		// What ran before the COMMIT stays committed, whatever failed after it: the store
		// must not run the text again on a serialization failure (see Retryable).
		return 0, fmt.Errorf("%w: %w", verdict.ErrTxEnded, err)
	}
	if err != nil {
		return 0, err
	}
	if conn.PgConn().TxStatus() != 'T' {
		return 0, verdict.ErrTxEnded
	}
	// Check again, as the session's own role, right before the commit: the
	// lock taken now is held until the commit, whatever the text did to the
	// transaction before. The check names every function and operator with
	// its schema, so that a search_path the text set cannot put its own in
	// their place; the text's other settings stay for the commit (a
	// deferred trigger of its tables may read them).
	if err := sameTx(ctx, conn.PgConn(), xid); err != nil {
		return 0, err
	}
	if err := p.enterOn(ctx, tx, job, token); err != nil {
		return 0, err
	}
	// The transaction's id (checked by sameTx) also resolves a commit whose reply is lost:
	// the statements are no redo's to run twice (see fence.Store.FencedStatements).
	if err := tx.Commit(ctx); err != nil {
		if !commitInDoubt(err) {
			return 0, p.commitErr(ctx, job, token, err)
		}
		// Closed before the caller asks about the transaction: a server still waiting for
		// the COMMIT then ends the transaction instead of keeping it in progress.
		_ = conn.Close(context.WithoutCancel(ctx))
		return 0, &verdict.InDoubtError{Xid: xid, Rows: out.rows, Err: fmt.Errorf("commit: %w", err)}
	}
	return out.rows, nil
}

// commitInDoubt reports whether a failed COMMIT may have committed all the same: the server
// did not answer it. An error of the server's own or a rollback it reported are certain
// failures; anything else is asked about, even what pgconn.SafeToRetry calls never sent, since
// a connection that broke while the COMMIT was read is reported as closed, which it also
// calls safe.
func commitInDoubt(err error) bool {
	var pe *pgconn.PgError
	return !errors.As(err, &pe) && !errors.Is(err, pgx.ErrTxCommitRollback)
}

// XactStatus returns what the server knows of transaction xid: "committed", "aborted",
// "in progress", or "" when it is too old for the server to tell.
func (p *Backend) XactStatus(ctx context.Context, xid string) (string, error) {
	var status *string
	if err := p.pool.QueryRow(ctx, `SELECT pg_xact_status($1::xid8)`, xid).Scan(&status); err != nil {
		return "", fmt.Errorf("status of transaction %s: %w", xid, err)
	}
	if status == nil {
		return "", nil
	}
	return *status, nil
}

// restore returns the session to its own role after a text, then reads the id of the
// transaction it is in. The type is named with its schema too: a text may create a type
// pg_temp.text, which an unqualified name would find first.
const restore = `RESET ROLE; SELECT pg_catalog.txid_current()::pg_catalog.text`

// sameTx restores the session's role after a text (restore) and returns
// verdict.ErrTxEnded when the transaction is not the one whose id was xid.
func sameTx(ctx context.Context, pgc *pgconn.PgConn, xid string) error {
	results, err := pgc.Exec(ctx, restore).ReadAll()
	if err != nil {
		return fmt.Errorf("reset role after the statements: %w", err)
	}
	last := results[len(results)-1]
	if len(last.Rows) != 1 || len(last.Rows[0]) != 1 {
		return fmt.Errorf("reset role after the statements: %d rows for the transaction's id, want 1", len(last.Rows))
	}
	if string(last.Rows[0][0]) != xid {
		return verdict.ErrTxEnded
	}
	return nil
}

// maxErrorText bounds each text field of a text's error, in bytes.
const maxErrorText = 4096

// clipPgError shortens the fields of pe that the text chose (RAISE
// EXCEPTION with its DETAIL and HINT, and where it was raised): the error
// is logged, and a text must not write megabytes into the daemon's log
// with each run. The ledger keeps an excerpt of its own.
func clipPgError(pe *pgconn.PgError) {
	for _, f := range []*string{&pe.Message, &pe.Detail, &pe.Hint, &pe.Where, &pe.InternalQuery} {
		if len(*f) <= maxErrorText {
			continue
		}
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart((*f)[cut]) {
			cut--
		}
		*f = fmt.Sprintf("%s… [%d bytes omitted]", (*f)[:cut], len(*f)-cut)
	}
}

// maxMessage bounds each message a text's results take, a row or a
// notice, in bytes.
const maxMessage = 64 << 20

// noCopyData is the reason the server gives for a COPY ... FROM STDIN in
// a text.
const noCopyData = "a sql job's text cannot COPY FROM STDIN: the scheduler sends no data"

// runText sends text as one message of the simple protocol, so that it may
// hold several statements, and returns the rows its statements inserted,
// updated or deleted. Rows the statements return are read one at a time
// and dropped: only their count is the output, and a text returning more
// than memory holds must not take the daemon down. A COPY ... FROM STDIN
// would wait for data that never comes, as long as the run's timeout
// allows (or forever): a CopyFail sent behind the text ends it at once
// with an error, and the server ignores a CopyFail that no COPY reads.
// What the results said of the text's transaction control is returned
// whatever err says.
func runText(ctx context.Context, pgc *pgconn.PgConn, text string) (out textOutcome, err error) {
	// A row is read whole, however large: bound it, so that one value near
	// the server's 1 GiB limit does not take that much of the daemon. The
	// session is closed after the run, so the bound need not be undone.
	pgc.Frontend().SetMaxBodyLen(maxMessage)
	mrr := pgc.Exec(ctx, text)
	pgc.Frontend().Send(&pgproto3.CopyFail{Message: noCopyData})
	// A failed flush breaks the connection: the results say so.
	_ = pgc.Frontend().Flush()
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		for rr.NextRow() {
		}
		tag, tagErr := rr.Close()
		switch {
		case tagErr != nil:
		case dmlTag.MatchString(tag.String()):
			out.rows += tag.RowsAffected()
		case tag.String() == "PREPARE TRANSACTION":
			out.prepares++
		case tag.String() == "COMMIT":
			out.committed = true
		}
	}
	err = mrr.Close()
	tooLarge := (*pgproto3.ExceededMaxBodyLenErr)(nil)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe):
		clipPgError(pe)
	case errors.As(err, &tooLarge):
		err = fmt.Errorf("a row or notice of %d bytes is more than the %d a sql job's text may return at once (its rows are dropped anyway): %w", tooLarge.ActualBodyLen, maxMessage, err)
	case err != nil && pgc.IsClosed() && ctx.Err() == nil:
		// pgconn reports a message over the bound between two results
		// only as the closed connection it leaves.
		err = fmt.Errorf("the connection closed while the text's results were read (so does a row or notice of more than the %d bytes a sql job's text may return at once): %w", maxMessage, err)
	}
	return out, err
}

// textOutcome is what the results of a text said.
type textOutcome struct {
	rows      int64 // inserted, updated or deleted
	prepares  int   // PREPARE TRANSACTIONs that succeeded (see unprepare)
	committed bool  // a COMMIT (or END) ended a transaction, the fenced one or one the text began
}

// enterOn enters job's fence with token in tx: with fence_verify on the
// job connection, whose role may not raise, or with the lock and the gate
// of Fenced on the store's own. It returns errNeedRaise when the fence is
// below token or missing.
func (p *Backend) enterOn(ctx context.Context, tx pgx.Tx, job string, token int64) error {
	var err error
	if p.jobPool != nil {
		_, err = tx.Exec(ctx, p.q.verify, job, token)
	} else if _, err = tx.Exec(ctx, p.q.lockShared, p.q.lockKey+job); err == nil {
		var one int32
		err = tx.QueryRow(ctx, p.q.gate, job, token).Scan(&one)
	}
	switch {
	case err == nil:
		return nil
	case !gateRefused(err):
		return pgFenceErr(token, fmt.Errorf("enter fence of job %q: %w", job, err))
	}
	return p.refused(ctx, job, token)
}
