package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/logs"

	"github.com/spf13/cobra"

	"scheduler"
)

func newHistoryCmd(c *cli) *cobra.Command {
	var (
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "history JOB",
		Short: "Print a job's runs from the ledger, newest first",
		Args:  exactArgs(1, "a job name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return &usageError{fmt.Errorf("history: --limit must be at least 1, got %d", limit)}
			}
			cl, err := c.loadCluster()
			if err != nil {
				return err
			}
			cfg := cl.Config
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			store, err := c.openCLIStore(ctx, cfg)
			if err != nil {
				return err
			}
			defer store.Close()
			runs, err := store.History(ctx, args[0], limit)
			if err != nil {
				return err
			}
			if runs == nil {
				runs = []scheduler.Run{}
			}
			if asJSON {
				withOutbox, err := runsWithOutbox(ctx, store, runs)
				if err != nil {
					return err
				}
				enc := json.NewEncoder(c.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(withOutbox)
			}
			if len(runs) == 0 {
				if err := c.judgeJob(ctx, cl, args[0]); err != nil {
					return err
				}
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SLOT\tSTATUS\tTOKEN\tNODE\tATTEMPT\tSTARTED\tTOOK\tERROR / REASON")
			for _, r := range runs {
				slot := r.ScheduledAt.UTC().Format(time.RFC3339)
				if r.Manual {
					slot += " (manual)"
				}
				if r.Backfill {
					slot += " (backfill)"
				}
				started, took := "-", "-"
				if r.StartedAt != nil {
					started = r.StartedAt.UTC().Format(time.RFC3339)
					if r.FinishedAt != nil {
						took = r.FinishedAt.Sub(*r.StartedAt).Round(time.Millisecond).String()
					}
				}
				note := r.Error
				if note == "" {
					note = r.Reason
				}
				// A job's SQL or receiver words its errors: shown, never acted on by the terminal.
				note = logs.Escape(note)
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\n", slot, r.Status, r.Token, r.Node, r.Attempt, started, took, note)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 20, "how many runs")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as a JSON array")
	return cmd
}

// judgeJob returns a usage error if the cluster's table has no job named name: the leader's
// when the coordinator answers, else the local file's (a broken one judges nothing).
func (c *cli) judgeJob(ctx context.Context, cl *config.Cluster, name string) error {
	s, err := c.connectTo(ctx, cl, false)
	switch {
	case err != nil && cl.Rest != nil:
		return nil // no table to judge the name by
	case err != nil:
		_, err = findJob(cl.Config, name)
		return err
	}
	defer s.close()
	if err := s.table(ctx).Check(name); err != nil {
		return &usageError{err}
	}
	return nil
}
