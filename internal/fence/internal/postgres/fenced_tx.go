package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"scheduler"
	"scheduler/internal/fence/internal/verdict"
)

// pgFencedTx is the Tx of a fenced transaction on Postgres. Nothing is sent
// until fn's first statement; that statement goes out in one batch behind
// BEGIN, the job's shared fence lock and the fence gate, so that the fence
// costs neither a round trip nor a statement of fn's. The server runs them
// in that order: the gate aborts the transaction before fn's statement runs
// unless the fence equals the token. If the fence refuses, that statement
// and every later one fail with the verdict (a stale error, or errNeedRaise
// when the fence is below the token) and nothing commits.
type pgFencedTx struct {
	p       *Backend
	job     string
	token   int64
	tx      pgx.Tx           // the transaction, once entered
	open    pgx.BatchResults // the entering batch while fn still reads its statement's result
	verdict error            // why the transaction cannot commit: the fence refused, or entering failed
}

// enter sends BEGIN, the fence and, unless sql is empty, fn's first
// statement, and reads the results up to that statement's, which the caller
// reads from the returned batch.
func (t *pgFencedTx) enter(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if t.p.q.check != "" {
		b.Queue(t.p.q.check, t.job, t.token)
	} else {
		b.Queue(t.p.q.lockShared, t.p.q.lockKey+t.job)
		b.Queue(t.p.q.gate, t.job, t.token)
	}
	if sql != "" {
		b.Queue(sql, args...)
	}
	br := t.p.pool.SendBatch(ctx, b)
	t.tx = br.Tx()
	t.open = br
	_, err := br.Exec() // BEGIN
	if err == nil && t.p.q.check != "" {
		_, err = br.Exec()
	} else if err == nil {
		if _, err = br.Exec(); err == nil { // the lock
			var one int32
			err = br.QueryRow().Scan(&one) // the gate
		}
	}
	if err != nil {
		return nil, t.refuse(ctx, err)
	}
	return br, nil
}

// refuse ends the transaction after entering failed and records why.
func (t *pgFencedTx) refuse(ctx context.Context, err error) error {
	t.finish()
	t.rollback(ctx)
	if isCode(err, verdict.StaleErrorCode) || !gateRefused(err) { // fence_check (a test variant) names the fence itself
		t.verdict = pgFenceErr(t.token, err)
	} else {
		t.verdict = t.p.refused(ctx, t.job, t.token)
	}
	return t.verdict
}

// finish closes the entering batch if fn left it open.
func (t *pgFencedTx) finish() {
	if err := t.closeOpen(nil); err != nil && t.verdict == nil {
		t.verdict = err
	}
}

// closeOpen closes the entering batch if it is open and returns err, or
// else the batch's error.
func (t *pgFencedTx) closeOpen(err error) error {
	if br := t.open; br != nil {
		t.open = nil
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

func (t *pgFencedTx) rollback(ctx context.Context) {
	if t.tx != nil {
		_ = t.tx.Rollback(ctx)
	}
}

// ready returns the entered transaction, or the verdict.
func (t *pgFencedTx) ready() (pgx.Tx, error) {
	t.finish()
	return t.tx, t.verdict
}

func (t *pgFencedTx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	if tx, err := t.ready(); err != nil || tx != nil {
		if err != nil {
			return 0, err
		}
		tag, err := tx.Exec(ctx, sql, args...)
		return tag.RowsAffected(), err
	}
	br, err := t.enter(ctx, sql, args)
	if err != nil {
		return 0, err
	}
	tag, err := br.Exec()
	return tag.RowsAffected(), t.closeOpen(err)
}

func (t *pgFencedTx) Query(ctx context.Context, sql string, args ...any) (scheduler.Rows, error) {
	if tx, err := t.ready(); err != nil || tx != nil {
		if err != nil {
			return nil, err
		}
		return pgTx{tx}.Query(ctx, sql, args...)
	}
	br, err := t.enter(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		t.finish()
		return nil, err
	}
	return batchRows{pgRows{rows}, t}, nil
}

func (t *pgFencedTx) QueryRow(ctx context.Context, sql string, args ...any) scheduler.Row {
	if tx, err := t.ready(); err != nil || tx != nil {
		if err != nil {
			return errRow{err}
		}
		return tx.QueryRow(ctx, sql, args...)
	}
	br, err := t.enter(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{br.QueryRow(), t}
}

func (t *pgFencedTx) Dialect() scheduler.Dialect { return scheduler.Postgres }

// batchRows are the rows of fn's first statement; closing them closes the
// entering batch.
type batchRows struct {
	pgRows
	t *pgFencedTx
}

func (r batchRows) Close() error { return r.t.closeOpen(r.pgRows.Close()) }

// batchRow is the row of fn's first statement; scanning it closes the
// entering batch.
type batchRow struct {
	row pgx.Row
	t   *pgFencedTx
}

func (r batchRow) Scan(dest ...any) error { return r.t.closeOpen(r.row.Scan(dest...)) }

// errRow is a Row whose Scan fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
