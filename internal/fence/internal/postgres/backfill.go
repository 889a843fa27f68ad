package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// backfillSQL fills in the schema and the run columns of a backfill statement.
func (p *Backend) backfillSQL(q string) string {
	return strings.NewReplacer("{s}", pgx.Identifier{p.schema}.Sanitize()+".",
		"{cols}", tables.PrefixCols("r.", tables.RunCols)).Replace(q)
}

// The statements of ClaimBackfill, in its batch: a new run, else the slot's
// finished run taken over, else the row as found. Placeholders: job, slot,
// token, node, now, backfill id, rerun.
const (
	pgBackfillInsert = `INSERT INTO {s}runs AS r (job, scheduled_at, manual, status, token, node, attempt, started_at, backfill)
		VALUES ($1, $2, false, 'running', $3, $4, 1, $5, $6)
		ON CONFLICT ON CONSTRAINT runs_slot_key DO NOTHING
		RETURNING {cols}`
	// The row inserted above carries the id, so it is not taken over again.
	pgBackfillTakeOver = `UPDATE {s}runs AS r
		SET status = 'running', token = $3, node = $4, attempt = r.attempt + 1, started_at = $5,
			finished_at = NULL, error = '', output = '', reason = '', backfill = $6
		WHERE r.job = $1 AND r.scheduled_at = $2 AND NOT r.manual AND r.status <> 'running'
			AND r.backfill <> $6 AND (r.status <> 'succeeded' OR $7::boolean)
		RETURNING {cols}`
	// A new statement, so it sees a row a concurrent claimer committed while
	// the writes waited for it; a row this transaction wrote has its xid.
	pgBackfillRow = `SELECT {cols} FROM {s}runs AS r
		WHERE r.job = $1 AND r.scheduled_at = $2 AND NOT r.manual AND r.xmin <> pg_current_xact_id()::xid`
	pgBackfillRuns = `SELECT {cols} FROM {s}runs AS r WHERE r.job = $1 AND r.backfill = $2 ORDER BY r.scheduled_at`
	pgSlotRuns     = `SELECT {cols} FROM {s}runs AS r WHERE r.job = $1 AND NOT r.manual AND r.scheduled_at BETWEEN $2 AND $3
		ORDER BY r.scheduled_at`
	pgRunning = `SELECT {cols} FROM {s}runs AS r WHERE r.job = $1 AND r.status = 'running' ORDER BY r.scheduled_at, r.run_id`
)

// ClaimBackfill claims b's slot for its backfill request in one fenced batch.
func (p *Backend) ClaimBackfill(ctx context.Context, token int64, node string, now time.Time, b scheduler.BackfillSlot) (scheduler.Result, error) {
	var written, found []scheduler.Run
	err := p.fencedBatch(ctx, []string{b.Job}, token, func(q *pgx.Batch) {
		q.Queue(p.backfillSQL(pgBackfillInsert), b.Job, b.At, token, node, now, b.ID).Query(collectRuns(&written, pgRun))
		q.Queue(p.backfillSQL(pgBackfillTakeOver), b.Job, b.At, token, node, now, b.ID, b.Rerun).Query(collectRuns(&written, pgRun))
		q.Queue(p.backfillSQL(pgBackfillRow), b.Job, b.At).Query(collectRuns(&found, pgRun))
	})
	switch {
	case err != nil:
		return scheduler.Result{}, err
	case len(written) > 0:
		return scheduler.Result{Run: written[0], Written: true}, nil
	case len(found) > 0:
		return scheduler.Result{Run: found[0]}, nil
	}
	return scheduler.Result{}, nil
}

// BackfillRuns returns the runs of job marked with id, oldest slot first.
func (p *Backend) BackfillRuns(ctx context.Context, job string, id int64) ([]scheduler.Run, error) {
	return p.queryRuns(ctx, pgRun, p.backfillSQL(pgBackfillRuns), job, id)
}

// SlotRuns returns the scheduled runs of job with slots in [from, to], oldest first.
func (p *Backend) SlotRuns(ctx context.Context, job string, from, to time.Time) ([]scheduler.Run, error) {
	return p.queryRuns(ctx, pgRun, p.backfillSQL(pgSlotRuns), job, from, to)
}

// Running returns the running runs of job, oldest slot first.
func (p *Backend) Running(ctx context.Context, job string) ([]scheduler.Run, error) {
	return p.queryRuns(ctx, pgRun, p.backfillSQL(pgRunning), job)
}
