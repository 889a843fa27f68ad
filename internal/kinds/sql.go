package kinds

import (
	"context"
	"fmt"
	"regexp"
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

// roleRE is a lower-case identifier, what CREATE ROLE makes of an unquoted name: the role is
// set without quoting, so nothing else may pass.
var roleRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// Check reports every problem of cfg, each at its key: the one check of a sql job's settings.
// Whether the store has roles at all is the caller's to check.
func (cfg SQLConfig) Check() []Problem {
	var ps problems
	if strings.TrimSpace(cfg.Statements) == "" {
		ps.add("sql", "is required for a sql job: the statements to run")
	}
	if strings.IndexByte(cfg.Statements, 0) >= 0 {
		// SQLite stops reading the text at it, so what follows would be dropped without a word.
		ps.add("sql", "contains a NUL byte")
	}
	if cfg.Role != "" && (!roleRE.MatchString(cfg.Role) || len(cfg.Role) > 63) {
		ps.add("role", fmt.Sprintf("must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 bytes), got %q", cfg.Role))
	}
	return ps
}

// NewSQL checks cfg (Check) and returns the job running its statements through each attempt's
// fenced transaction. Every problem is reported, joined, each a Problem.
func NewSQL(cfg SQLConfig) (*SQLJob, error) {
	if err := refusal(cfg.Check()); err != nil {
		return nil, err
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
