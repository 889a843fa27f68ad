// Package logs is `scheduler logs`: a run's kept output from the ledger, and the output of a
// running run followed from the leader's status server (GET /runs/{id}/output, package
// runlog), until the ledger has the run finished.
package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"scheduler/cmd/scheduler/internal/suggest"

	"scheduler"
)

// errNoRun is a job without runs, found by Find.
var errNoRun = errors.New("no such run")

// Store is what the command reads of the ledger.
type Store interface {
	// SlotRun returns job's run of slot at; RunByID its run runID; both fail with an error
	// that Command.NoRun recognises when there is none.
	SlotRun(ctx context.Context, job string, at time.Time) (scheduler.Run, error)
	RunByID(ctx context.Context, job string, runID int64) (scheduler.Run, error)
	// Last returns the newest run of each of jobs that has one.
	Last(ctx context.Context, jobs ...string) (map[string]scheduler.Run, error)
}

// Command is one `scheduler logs JOB`.
type Command struct {
	Job   string
	Store Store
	// NoRun reports whether a Store error means the run does not exist.
	NoRun func(error) bool
	// Jobs are the configured jobs, named when Job is none of them.
	Jobs []string
	// Usage marks an error as bad usage (exit status 2).
	Usage func(error) error
	// Leader returns the host:port of the leader's status server; for Follow only.
	Leader func(ctx context.Context) (string, error)
	// Poll is the wait before asking the ledger and the leader again while following.
	Poll           time.Duration
	Stdout, Stderr io.Writer
}

// Find returns the run the command names: the job's run of slot at (when set), its run runID
// (when set), or its latest run.
func (c Command) Find(ctx context.Context, at time.Time, runID int64) (scheduler.Run, error) {
	var (
		run scheduler.Run
		err error
	)
	switch {
	case !at.IsZero():
		run, err = c.Store.SlotRun(ctx, c.Job, at)
	case runID != 0:
		run, err = c.Store.RunByID(ctx, c.Job, runID)
	default:
		var last map[string]scheduler.Run
		if last, err = c.Store.Last(ctx, c.Job); err == nil {
			var ok bool
			if run, ok = last[c.Job]; !ok {
				err = errNoRun
			}
		}
	}
	if err == nil || !(errors.Is(err, errNoRun) || c.NoRun(err)) {
		return run, err
	}
	switch {
	case !c.configured():
		return run, c.Usage(fmt.Errorf("logs: no job named %q%s; the jobs are: %s", c.Job, suggest.DidYouMean(c.Job, c.Jobs), strings.Join(c.Jobs, ", ")))
	case !at.IsZero():
		return run, fmt.Errorf("logs: job %q has no run at slot %s (see scheduler history %s)", c.Job, at.UTC().Format(time.RFC3339), c.Job)
	case runID != 0:
		return run, fmt.Errorf("logs: job %q has no run %d (see scheduler history %s)", c.Job, runID, c.Job)
	}
	return run, fmt.Errorf("logs: job %q has no runs in the ledger yet", c.Job)
}

func (c Command) configured() bool {
	for _, j := range c.Jobs {
		if j == c.Job {
			return true
		}
	}
	return false
}

// Print writes run's kept output to Stdout, and which run it is to Stderr.
func (c Command) Print(run scheduler.Run) error {
	switch {
	case run.Status == scheduler.StatusRunning:
		return fmt.Errorf("logs: run %d of job %q (%s) is still running: its output is kept when it ends; follow it with -f", run.RunID, c.Job, slotOf(run))
	case run.Output == "":
		return fmt.Errorf("logs: run %d of job %q (%s, %s) kept no output", run.RunID, c.Job, slotOf(run), run.Status)
	}
	fmt.Fprintf(c.Stderr, "run %d of job %s (%s): %s, attempt %d, token %d, node %s\n",
		run.RunID, c.Job, slotOf(run), run.Status, run.Attempt, run.Token, run.Node)
	_, err := io.WriteString(c.Stdout, withNewline(run.Output))
	return err
}

// slotOf names run's slot as history prints it.
func slotOf(run scheduler.Run) string {
	s := "slot " + run.ScheduledAt.UTC().Format(time.RFC3339)
	if run.Manual {
		s += ", manual"
	}
	return s
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// Follow streams the output of run, running, from the leader, until the ledger has it
// finished, then says how it ended. A stream that ends while the run still runs (the wait
// before a retry, a failover) is picked up again from the leader of the moment, from where it
// stopped; a run that starts again on a new leader is followed from its new start.
func (c Command) Follow(ctx context.Context, run scheduler.Run) error {
	fmt.Fprintf(c.Stderr, "following run %d of job %s (%s)\n", run.RunID, c.Job, slotOf(run))
	var (
		from    int64
		printed bool
	)
	for {
		n, restarted, err := c.stream(ctx, run.RunID, from)
		switch {
		case restarted:
			fmt.Fprintln(c.Stderr, "(the run's output starts again: it runs again, after a failover)")
			from = 0
			continue
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			fmt.Fprintf(c.Stderr, "(waiting for the leader: %v)\n", err)
		}
		from += n
		printed = printed || n > 0
		cur, err := c.Store.RunByID(ctx, c.Job, run.RunID)
		if err != nil {
			return fmt.Errorf("logs: %w", err)
		}
		if cur.Status != scheduler.StatusRunning {
			if !printed { // it ended before its output reached us: the ledger kept it
				_, _ = io.WriteString(c.Stdout, withNewline(cur.Output))
			}
			msg := ""
			if cur.Error != "" {
				msg = ": " + Escape(cur.Error)
			}
			fmt.Fprintf(c.Stderr, "run %d ended %s, attempt %d%s\n", cur.RunID, cur.Status, cur.Attempt, msg)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.Poll):
		}
	}
}

// stream copies the leader's stream of run runID's output, from offset from, to Stdout and
// returns how far it got past from; restarted when the leader's output is behind from.
func (c Command) stream(ctx context.Context, runID, from int64) (n int64, restarted bool, err error) {
	addr, err := c.Leader(ctx)
	if err != nil {
		return 0, false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/runs/%d/output?from=%d", addr, runID, from), nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = resp.Body.Close() }()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return 0, false, nil // not started on the leader yet, or over: the ledger says which
	case resp.StatusCode != http.StatusOK:
		return 0, false, fmt.Errorf("leader at %s: %s", addr, resp.Status)
	}
	off, _ := strconv.ParseInt(resp.Header.Get("Output-Offset"), 10, 64)
	if off < from {
		return 0, true, nil
	}
	if off > from {
		fmt.Fprintf(c.Stderr, "(%d bytes of output were no longer kept)\n", off-from)
	}
	copied, err := io.Copy(c.Stdout, resp.Body)
	return off - from + copied, false, err
}
