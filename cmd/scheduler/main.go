// Command scheduler is a cron-style job scheduler that runs every job once across a cluster:
// replicas elect a leader through etcd, the leader runs the cron table, and every run carries a
// fencing token that the store checks before it accepts the run's results.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/signals"
)

func main() {
	err := run(signals.Context(), os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}

// run executes the command line args and returns what went wrong, if anything.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	cmd := newRootCmd(environ, stdout, stderr)
	cmd.SetArgs(args)
	return cmd.ExecuteContext(ctx)
}

// exitCode maps an error to the exit status of the contract: 0 success, 1 runtime failure,
// 2 bad usage or invalid configuration. It prints the error.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, errHelpShown) {
		return 2
	}
	fmt.Fprintf(stderr, "scheduler: %v\n", err)
	var ce *config.Error
	var ue *usageError
	if errors.As(err, &ce) || errors.As(err, &ue) {
		return 2
	}
	return 1
}

// usageError is a bad command line: unknown command or flag, wrong arguments.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }
