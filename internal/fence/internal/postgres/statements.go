package postgres

import (
	"context"
	"errors"
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
	slot, manual := "", "false"
	if at, m, ok := scheduler.SlotFrom(ctx); ok {
		slot, manual = at.UTC().Format(time.RFC3339Nano), strconv.FormatBool(m)
	}
	if _, err := tx.Exec(ctx, `SELECT set_config('scheduler.job', $1, true), set_config('scheduler.token', $2, true),
		set_config('scheduler.slot', $3, true), set_config('scheduler.manual', $4, true),
		set_config('scheduler.run_secret', $5, true)`,
		job, strconv.FormatInt(token, 10), slot, manual, scheduler.RunSecretFrom(ctx)); err != nil {
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
	// Check again, as the session's own role, right before the commit: the
	// lock taken now is held until the commit, whatever the text did to
	// the transaction before.
	if _, err := tx.Exec(ctx, `RESET ROLE`); err != nil {
		return 0, fmt.Errorf("reset role: %w", err)
	}
	if err := p.enterOn(ctx, tx, job, token); err != nil {
		return 0, err
	}
	// The transaction's id, so that a commit whose reply is lost can be resolved: the
	// statements are no redo's to run twice (see fence.Store.FencedStatements).
	var xid string
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&xid); err != nil {
		return 0, fmt.Errorf("read the transaction's id: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		if !commitInDoubt(err) {
			return 0, pgFenceErr(token, fmt.Errorf("commit: %w", err))
		}
		// Closed before the caller asks about the transaction: a server still waiting for
		// the COMMIT then ends the transaction instead of keeping it in progress.
		_ = conn.Close(context.WithoutCancel(ctx))
		return 0, &verdict.InDoubtError{Xid: xid, Rows: n, Err: fmt.Errorf("commit: %w", err)}
	}
	return n, nil
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
