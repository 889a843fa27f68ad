package fence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// ErrNoRun reports a run looked up that the ledger does not have.
var ErrNoRun = errors.New("fence: no such run")

// runReads are the backends' reads of one run, for `scheduler logs`.
type runReads interface {
	// RunByID returns the run runID of job, or none.
	RunByID(ctx context.Context, job string, runID int64) ([]scheduler.Run, error)
	// RunsOfSlot returns job's runs of slot at, the scheduled one first, then the manual one.
	RunsOfSlot(ctx context.Context, job string, at time.Time) ([]scheduler.Run, error)
}

// RunByID returns job's run runID, output included. A run the ledger does not have, or one of
// another job, fails with ErrNoRun.
func (s *Store) RunByID(ctx context.Context, job string, runID int64) (scheduler.Run, error) {
	runs, err := s.b.RunByID(ctx, job, runID)
	switch {
	case err != nil:
		return scheduler.Run{}, fmt.Errorf("run %d of job %q: %w", runID, job, err)
	case len(runs) == 0:
		return scheduler.Run{}, fmt.Errorf("run %d of job %q: %w", runID, job, ErrNoRun)
	}
	return runs[0], nil
}

// SlotRun returns job's run of slot at, output included: the scheduled run, or a manual run
// triggered at that instant when the slot has no scheduled one. None fails with ErrNoRun.
func (s *Store) SlotRun(ctx context.Context, job string, at time.Time) (scheduler.Run, error) {
	at = tables.NormTime(at)
	runs, err := s.b.RunsOfSlot(ctx, job, at)
	switch {
	case err != nil:
		return scheduler.Run{}, fmt.Errorf("run of job %q at %s: %w", job, at.Format(timeLayout), err)
	case len(runs) == 0:
		return scheduler.Run{}, fmt.Errorf("run of job %q at %s: %w", job, at.Format(timeLayout), ErrNoRun)
	}
	return runs[0], nil
}
