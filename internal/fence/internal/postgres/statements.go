package postgres

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	pool := p.pool
	if p.jobPool != nil {
		pool = p.jobPool
	}
	c, err := pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("connect for the statements: %w", err)
	}
	// The statements may have changed the session (SET ROLE, a setting, a
	// session advisory lock, a temporary table): it must not serve anyone
	// after them, so it is closed instead of going back to the pool.
	conn := c.Hijack()
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()

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
		set_config('scheduler.run_secret', $5, true), pg_catalog.txid_current()::text`,
		job, strconv.FormatInt(token, 10), slot, manual, scheduler.RunSecretFrom(ctx)).Scan(nil, nil, nil, nil, nil, &xid); err != nil {
		return 0, fmt.Errorf("set the job's settings: %w", err)
	}
	if role != "" {
		if _, err := tx.Exec(ctx, `SET LOCAL ROLE `+pgx.Identifier{role}.Sanitize()); err != nil {
			return 0, fmt.Errorf("set role %s: %w", role, err)
		}
	}
	results, err := conn.PgConn().Exec(ctx, text).ReadAll()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, r := range results {
		if dmlTag.MatchString(r.CommandTag.String()) {
			n += r.CommandTag.RowsAffected()
		}
	}
	if conn.PgConn().TxStatus() != 'T' {
		return 0, verdict.ErrTxEnded
	}
	// Check again, as the session's own role and with its own settings,
	// right before the commit: the lock taken now is held until the
	// commit, whatever the text did to the transaction before. What the
	// text set is undone first, so that the check runs the scheduler's own
	// functions (a search_path of the text's could put a schema of its own
	// before pg_catalog), with the session's timeouts.
	if err := sameTx(ctx, conn.PgConn(), xid); err != nil {
		return 0, err
	}
	if err := p.enterOn(ctx, tx, job, token); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, pgFenceErr(token, fmt.Errorf("commit: %w", err))
	}
	return n, nil
}

// restore undoes what a text set on its session, then reads the id of the
// transaction it is in. RESET ALL leaves the role alone, hence RESET ROLE.
const restore = `RESET ROLE; RESET ALL; SET LOCAL search_path = pg_catalog, pg_temp; SELECT pg_catalog.txid_current()::text`

// sameTx restores the session after a text (restore) and returns
// verdict.ErrTxEnded when the transaction is not the one whose id was xid.
func sameTx(ctx context.Context, pgc *pgconn.PgConn, xid string) error {
	results, err := pgc.Exec(ctx, restore).ReadAll()
	if err != nil {
		return fmt.Errorf("restore the session after the statements: %w", err)
	}
	last := results[len(results)-1]
	if len(last.Rows) != 1 || len(last.Rows[0]) != 1 {
		return fmt.Errorf("restore the session after the statements: %d rows for the transaction's id, want 1", len(last.Rows))
	}
	if string(last.Rows[0][0]) != xid {
		return verdict.ErrTxEnded
	}
	return nil
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
