package main

import (
	"fmt"
	"time"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/view"
	"scheduler/internal/schedule"

	"github.com/spf13/cobra"
)

func newNextCmd(c *cli) *cobra.Command {
	var (
		n    int
		from string
	)
	cmd := &cobra.Command{
		Use:   "next JOB",
		Short: "Print a job's next slots in its timezone, with UTC offsets; DST adjustments are marked",
		Args:  exactArgs(1, "a job name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 1 || n > schedule.MaxBetween {
				return &usageError{fmt.Errorf("next: -n must be from 1 to %d, got %d", schedule.MaxBetween, n)}
			}
			start := time.Now()
			if from != "" {
				t, err := time.Parse(time.RFC3339, from)
				if err != nil {
					return &usageError{fmt.Errorf("next: --from %q: want RFC3339, such as 2026-03-29T00:00:00Z", from)}
				}
				start = t
			}
			cfg, err := c.loadConfig()
			if err != nil {
				return err
			}
			job, err := findJob(cfg, args[0])
			if err != nil {
				return err
			}
			// The schedule as the load parsed it in its zone: the one the daemon fires.
			sched := job.ParsedSchedule()
			loc := sched.Location()
			follows := "real time"
			if sched.WallClock() {
				follows = "wall clock"
			}
			fmt.Fprintf(c.stdout, "# %s: %q in %s (follows the %s)\n", job.Name, job.Schedule, loc, follows)
			for _, sl := range sched.Slots(start, n) {
				line := fmt.Sprintf("%s  %s", sl.At.Format("2006-01-02 15:04:05 -07:00 MST"), sl.At.UTC().Format(time.RFC3339))
				if sl.Adjusted {
					line += fmt.Sprintf("  adjusted: %s does not exist in %s (DST), runs at the first instant after", sl.Nominal, loc)
				}
				if job.Jitter > 0 {
					// The date too: a jitter can carry a slot past midnight.
					line += fmt.Sprintf("  fires at %s (jitter)", sl.At.Add(schedule.Jitter(job.Name, sl.At, job.Jitter)).Format("2006-01-02 15:04:05.000 -07:00 MST"))
				}
				fmt.Fprintln(c.stdout, line)
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&n, "count", "n", 10, "how many slots")
	cmd.Flags().StringVar(&from, "from", "", "start after this instant (RFC3339); default now")
	return cmd
}

// findJob returns the named job of the table.
func findJob(c *config.Config, name string) (*config.Job, error) {
	for i := range c.Jobs {
		if c.Jobs[i].Name == name {
			return &c.Jobs[i], nil
		}
	}
	names := make([]string, len(c.Jobs))
	for i, j := range c.Jobs {
		names[i] = j.Name
	}
	return nil, &usageError{view.UnknownJob(name, "the configuration", names)}
}
