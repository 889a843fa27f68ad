package kinds

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"scheduler"
)

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
	cfg SQLConfig
}

// NewSQL returns the job running cfg's statements through each attempt's fenced transaction.
func NewSQL(cfg SQLConfig) (*SQLJob, error) {
	if strings.TrimSpace(cfg.Statements) == "" {
		return nil, errors.New("sql: statements required")
	}
	return &SQLJob{cfg: cfg}, nil
}

// Execute runs the statements once for run; see SQLJob.
func (j *SQLJob) Execute(ctx context.Context, run scheduler.Attempt) (string, error) {
	n, err := run.FencedStatements(ctx, j.cfg.Role, j.cfg.Statements)
	if err != nil {
		return "", fmt.Errorf("sql statements with token %d: %w", run.Token, err)
	}
	return fmt.Sprintf("%d rows affected", n), nil
}
