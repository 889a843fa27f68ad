package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// The statements of ClaimBackfill, as on Postgres. Placeholders: job, slot,
// token, node, now, backfill id, rerun.
const (
	liteBackfillInsert = `INSERT INTO runs (job, scheduled_at, manual, status, token, node, attempt, started_at, backfill)
		VALUES ($1, $2, 0, 'running', $3, $4, 1, $5, $6)
		ON CONFLICT (job, scheduled_at, manual) DO NOTHING
		RETURNING ` + tables.RunCols
	liteBackfillTakeOver = `UPDATE runs
		SET status = 'running', token = $3, node = $4, attempt = attempt + 1, started_at = $5,
			finished_at = NULL, error = '', output = '', reason = '', backfill = $6
		WHERE job = $1 AND scheduled_at = $2 AND manual = 0 AND status <> 'running'
			AND backfill <> $6 AND (status <> 'succeeded' OR $7)
		RETURNING ` + tables.RunCols
	liteBackfillRow = `SELECT ` + tables.RunCols + ` FROM runs WHERE job = $1 AND scheduled_at = $2 AND manual = 0`
)

// ClaimBackfill claims b's slot for its backfill request in one fenced
// transaction.
func (l *Backend) ClaimBackfill(ctx context.Context, token int64, node string, now time.Time, b scheduler.BackfillSlot) (scheduler.Result, error) {
	var res scheduler.Result
	err := l.fencedWrite(ctx, []string{b.Job}, token, func(tx *sql.Tx) error {
		res = scheduler.Result{}
		args := []any{b.Job, b.At.UnixMicro(), token, node, now.UnixMicro(), b.ID, b.Rerun}
		for _, write := range []string{liteBackfillInsert, liteBackfillTakeOver} {
			r, err := tables.ScanRun(tx.QueryRowContext(ctx, write, args...), true)
			if err == nil {
				res = scheduler.Result{Run: r, Written: true}
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		r, err := tables.ScanRun(tx.QueryRowContext(ctx, liteBackfillRow, b.Job, b.At.UnixMicro()), true)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		res = scheduler.Result{Run: r}
		return nil
	})
	return res, err
}

// BackfillRuns returns the runs of job marked with id, oldest slot first.
func (l *Backend) BackfillRuns(ctx context.Context, job string, id int64) ([]scheduler.Run, error) {
	return l.queryRuns(ctx, true, `SELECT `+tables.RunCols+` FROM runs WHERE job = $1 AND backfill = $2
		ORDER BY scheduled_at`, job, id)
}

// SlotRuns returns the scheduled runs of job with slots in [from, to], oldest first.
func (l *Backend) SlotRuns(ctx context.Context, job string, from, to time.Time) ([]scheduler.Run, error) {
	return l.queryRuns(ctx, true, `SELECT `+tables.RunCols+` FROM runs WHERE job = $1 AND manual = 0
		AND scheduled_at BETWEEN $2 AND $3 ORDER BY scheduled_at`, job, from.UnixMicro(), to.UnixMicro())
}

// Running returns the running runs of job, oldest slot first.
func (l *Backend) Running(ctx context.Context, job string) ([]scheduler.Run, error) {
	return l.queryRuns(ctx, true, `SELECT `+tables.RunCols+` FROM runs WHERE job = $1 AND status = 'running'
		ORDER BY scheduled_at, run_id`, job)
}
