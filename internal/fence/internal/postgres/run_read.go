package postgres

import (
	"context"
	"time"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// RunByID returns the run runID of job, or none.
func (p *Backend) RunByID(ctx context.Context, job string, runID int64) ([]scheduler.Run, error) {
	return p.queryRuns(ctx, pgRun, p.outboxSQL(`SELECT `+tables.PrefixCols("r.", tables.RunCols)+` FROM {s}runs AS r
		WHERE r.run_id = $1 AND r.job = $2`), runID, job)
}

// RunsOfSlot returns job's runs of slot at, the scheduled one first.
func (p *Backend) RunsOfSlot(ctx context.Context, job string, at time.Time) ([]scheduler.Run, error) {
	return p.queryRuns(ctx, pgRun, p.outboxSQL(`SELECT `+tables.PrefixCols("r.", tables.RunCols)+` FROM {s}runs AS r
		WHERE r.job = $1 AND r.scheduled_at = $2 ORDER BY r.manual`), job, at)
}
