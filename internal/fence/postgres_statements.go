package fence

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// dmlTag matches the command tags whose count is of rows written.
var dmlTag = regexp.MustCompile(`^(INSERT|UPDATE|DELETE|MERGE) `)

// errTxEnded reports statements that ended the fenced transaction.
var errTxEnded = errors.New("the statements ended the fenced transaction themselves (BEGIN, COMMIT or ROLLBACK in the text); what ran before a COMMIT is committed, and what ran after it was not fenced")

// statements runs st as FencedStatements documents; a fence below token
// is raised with the store's own role (see raising).
func (p *pgBackend) statements(ctx context.Context, job string, token int64, st statements) (n int64, err error) {
	err = p.raising(ctx, job, token, func() (err error) {
		n, err = p.statementsOnce(ctx, job, token, st)
		return err
	})
	return n, err
}

func (p *pgBackend) statementsOnce(ctx context.Context, job string, token int64, st statements) (int64, error) {
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
	if st.Role != "" {
		if _, err := tx.Exec(ctx, `SET LOCAL ROLE `+pgx.Identifier{st.Role}.Sanitize()); err != nil {
			return 0, fmt.Errorf("set role %s: %w", st.Role, err)
		}
	}
	results, err := conn.PgConn().Exec(ctx, st.Text).ReadAll()
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
		return 0, errTxEnded
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
	if err := tx.Commit(ctx); err != nil {
		return 0, pgFenceErr(token, fmt.Errorf("commit: %w", err))
	}
	return n, nil
}

// enterOn enters job's fence with token in tx: with fence_verify on the
// job connection, whose role may not raise, or with the lock and the gate
// of Fenced on the store's own. It returns errNeedRaise when the fence is
// below token or missing.
func (p *pgBackend) enterOn(ctx context.Context, tx pgx.Tx, job string, token int64) error {
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
