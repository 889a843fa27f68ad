package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// SQLJob runs configured statements in one fenced transaction on the store, the sql job type.
//
// The statements are sent as they are, in one call without arguments, so they may be several
// separated by semicolons; they commit together or not at all, and only while the run's token is
// the newest the store has seen for the job. The output is the number of rows affected as the
// store reports it for the whole text: that of the last statement, on Postgres and on SQLite.
type SQLJob struct {
	fencer     Fencer
	statements string
}

// NewSQL returns the job running statements through f.
func NewSQL(f Fencer, statements string) (*SQLJob, error) {
	var errs []error
	if f == nil {
		errs = append(errs, errors.New("fencer: required"))
	}
	if strings.TrimSpace(statements) == "" {
		errs = append(errs, errors.New("sql: statements required"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &SQLJob{fencer: f, statements: statements}, nil
}

// Execute runs the statements once for run; see SQLJob.
func (j *SQLJob) Execute(ctx context.Context, run Run) (string, error) {
	var n int64
	err := j.fencer.Fenced(ctx, run.Job, run.Token, func(ctx context.Context, tx Tx) error {
		var err error
		n, err = tx.Exec(ctx, j.statements)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("sql statements with token %d: %w", run.Token, err)
	}
	return fmt.Sprintf("%d rows affected", n), nil
}
