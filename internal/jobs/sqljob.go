package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"scheduler"
)

// StatementRunner runs the text of a sql job as a whole in one transaction fenced with token for
// job, under role when it is set, and returns the number of rows the statements wrote. A stale
// token fails with an error that errors.Is ErrFenced, and nothing commits.
type StatementRunner interface {
	FencedStatements(ctx context.Context, job string, token int64, role, statements string) (int64, error)
}

// SQLConfig configures a sql job.
type SQLConfig struct {
	// Statements are one or more statements separated by semicolons.
	Statements string
	// Role is the database role the statements run under; empty: the connection's own.
	Role string
}

// SQLJob runs configured statements in one fenced transaction on the store, the sql job type.
//
// The statements are sent as one text without arguments, so they may be several separated by
// semicolons; they commit together or not at all, and only while the run's token is the newest
// the store has seen for the job. The output is the number of rows they inserted, updated or
// deleted, summed over the statements.
type SQLJob struct {
	runner StatementRunner
	cfg    SQLConfig
}

// NewSQL returns the job running cfg's statements through r.
func NewSQL(r StatementRunner, cfg SQLConfig) (*SQLJob, error) {
	var errs []error
	if r == nil {
		errs = append(errs, errors.New("statement runner: required"))
	}
	if strings.TrimSpace(cfg.Statements) == "" {
		errs = append(errs, errors.New("sql: statements required"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &SQLJob{runner: r, cfg: cfg}, nil
}

// Execute runs the statements once for run; see SQLJob.
func (j *SQLJob) Execute(ctx context.Context, run scheduler.Attempt) (string, error) {
	n, err := j.runner.FencedStatements(ctx, run.Job, run.Token, j.cfg.Role, j.cfg.Statements)
	if err != nil {
		return "", fmt.Errorf("sql statements with token %d: %w", run.Token, err)
	}
	return fmt.Sprintf("%d rows affected", n), nil
}
