package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"scheduler/cmd/scheduler/internal/backfills"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/suggest"
	"scheduler/internal/control"
	"scheduler/internal/jobs"
)

// backfillWatch is how often `backfill` reads the request's progress while it waits.
const backfillWatch = 500 * time.Millisecond

// stamp formats a time for the command's messages.
func stamp(t time.Time) string { return t.Format(time.RFC3339) }

// backfillFlags are the options of `scheduler backfill`.
type backfillFlags struct {
	from, to, overlap  string
	rerun, yes, detach bool
}

func newBackfillCmd(c *cli) *cobra.Command {
	var f backfillFlags
	cmd := &cobra.Command{
		Use:   "backfill JOB --from T1 --to T2",
		Short: "Ask the leader to run a job's slots in a past range, in order, each fenced and recorded; survives failover",
		Long: `Ask the leader to run the job's scheduled slots from T1 to T2 (both included), in slot
order, each claimed, fenced and recorded like a fired slot and marked as backfilled.
T1 and T2 are RFC 3339 times, or dates (2006-01-02) in the job's zone: a date as
--to means the whole of that day. T2 must not be in the future.

Slots whose runs succeeded are skipped unless --rerun: a rerun is the next attempt
of the slot's run (the same run id, so the same Idempotency-Key for an http job),
fenced like the first. The request is kept in the cluster's operations state: a
new leader carries on where the ledger says the last one stopped.`,
		Args: exactArgs(1, "a job name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.backfill(cmd.Context(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "the first slot's earliest time: RFC 3339, or a date in the job's zone (required)")
	fl.StringVar(&f.to, "to", "", "the last slot's latest time: RFC 3339, or a date (the whole day) in the job's zone (required)")
	fl.StringVar(&f.overlap, "overlap", "", "skip | queue | allow: what a slot does while another run of the job is in progress; default: the job's overlap (replace: queue)")
	fl.BoolVar(&f.rerun, "rerun", false, "run slots whose runs succeeded again")
	fl.BoolVar(&f.yes, "yes", false, fmt.Sprintf("confirm a range of more than %d slots", backfills.MaxUnconfirmed))
	fl.BoolVar(&f.detach, "detach", false, "submit the request and exit without waiting for it")
	return cmd
}

// backfill checks the request against the job's schedule, submits it, and unless detached
// prints its progress until the leader is done with it.
func (c *cli) backfill(ctx context.Context, name string, f backfillFlags) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	job, err := backfillJob(cfg, name)
	if err != nil {
		return err
	}
	now := time.Now()
	from, to, err := backfills.ParseRange(f.from, f.to, job.ParsedSchedule().Location(), now)
	if err != nil {
		return &usageError{fmt.Errorf("backfill %s: %w", name, err)}
	}
	if f.overlap != "" {
		if _, err := backfills.Overlap(f.overlap, jobs.Overlap(job.Overlap)); err != nil {
			return &usageError{fmt.Errorf("backfill %s: --overlap: %w", name, err)}
		}
	}
	slots, err := backfills.Slots(job.ParsedSchedule(), from, to)
	retention := backfills.CheckRetention(slots, job.History.MaxAge, job.History.MaxRuns, now)
	switch {
	case err != nil:
		return &usageError{fmt.Errorf("backfill %s: %w", name, err)}
	case len(slots) == 0:
		return &usageError{fmt.Errorf("backfill %s: no slots of %q from %s to %s", name, job.Schedule, stamp(from), stamp(to))}
	case retention != nil:
		return &usageError{fmt.Errorf("backfill %s: %w", name, retention)}
	case len(slots) > backfills.MaxUnconfirmed && !f.yes:
		return &usageError{fmt.Errorf("backfill %s: %d slots from %s to %s: more than %d; pass --yes to request them all",
			name, len(slots), stamp(from), stamp(to), backfills.MaxUnconfirmed)}
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := c.connect(sctx, false)
	if err != nil {
		return err
	}
	defer s.close()
	bs, err := backfills.Of(s.ctl)
	if err != nil {
		return err
	}
	b, err := bs.SubmitBackfill(sctx, control.Backfill{Job: name, ID: now.UTC().UnixMicro(), From: from, To: to,
		Rerun: f.rerun, Overlap: f.overlap, By: requester(s)})
	if err != nil {
		return err
	}
	loc := job.ParsedSchedule().Location()
	fmt.Fprintf(c.stdout, "backfill %s: %d slots from %s to %s requested (backfill %d)\n", name, len(slots),
		stamp(slots[0].In(loc)), stamp(slots[len(slots)-1].In(loc)), b.ID)
	if f.detach {
		fmt.Fprintf(c.stdout, "the leader works through it; see `scheduler history %s`\n", name)
		return nil
	}
	return backfills.Watch(ctx, bs, b, backfillWatch, c.stdout)
}

// backfillJob returns the named job, or a usage error that lists the jobs.
func backfillJob(cfg *config.Config, name string) (*config.Job, error) {
	if j, err := findJob(cfg, name); err == nil {
		return j, nil
	}
	names := make([]string, len(cfg.Jobs))
	for i, j := range cfg.Jobs {
		names[i] = j.Name
	}
	return nil, &usageError{fmt.Errorf("backfill: no job named %q in the configuration%s; its jobs: %s", name, suggest.DidYouMean(name, names), strings.Join(names, ", "))}
}
