package sqlite

import (
	"context"
	"time"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// RunByID returns the run runID of job, or none.
func (l *Backend) RunByID(ctx context.Context, job string, runID int64) ([]scheduler.Run, error) {
	return l.queryRuns(ctx, true, `SELECT `+tables.RunCols+` FROM runs WHERE run_id = $1 AND job = $2`, runID, job)
}

// RunsOfSlot returns job's runs of slot at, the scheduled one first.
func (l *Backend) RunsOfSlot(ctx context.Context, job string, at time.Time) ([]scheduler.Run, error) {
	return l.queryRuns(ctx, true, `SELECT `+tables.RunCols+` FROM runs WHERE job = $1 AND scheduled_at = $2
		ORDER BY manual`, job, at.UnixMicro())
}
