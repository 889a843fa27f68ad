package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
)

// controlCmd is a command that changes cluster-wide state for one configured job: in etcd, or
// in the store with another election backend.
func controlCmd(c *cli, use, short string, act func(ctx context.Context, s *session, job string) (string, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use + " JOB",
		Short: short,
		Args:  exactArgs(1, "a job name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			s, err := c.connect(ctx, false)
			if err != nil {
				return err
			}
			defer s.close()
			table := s.table(ctx)
			for _, w := range table.Warnings {
				fmt.Fprintf(c.stderr, "warning: %s\n", w)
			}
			if err := table.Check(args[0]); err != nil {
				return &usageError{err}
			}
			msg, err := act(ctx, s, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(c.stdout, msg)
			return nil
		},
	}
}

func newPauseCmd(c *cli) *cobra.Command {
	return controlCmd(c, "pause", "Stop firing a job cluster-wide (its slots are recorded skipped); survives failover",
		func(ctx context.Context, s *session, job string) (string, error) {
			changed, err := s.ctl.Pause(ctx, job, requester(s))
			if err != nil {
				return "", err
			}
			if !changed {
				return fmt.Sprintf("%s was already paused", job), nil
			}
			return fmt.Sprintf("%s paused", job), nil
		})
}

func newResumeCmd(c *cli) *cobra.Command {
	return controlCmd(c, "resume", "Restart firing a paused job cluster-wide",
		func(ctx context.Context, s *session, job string) (string, error) {
			changed, err := s.ctl.Resume(ctx, job)
			if err != nil {
				return "", err
			}
			if !changed {
				return fmt.Sprintf("%s was not paused", job), nil
			}
			return fmt.Sprintf("%s resumed", job), nil
		})
}

func newTriggerCmd(c *cli) *cobra.Command {
	return controlCmd(c, "trigger", "Ask the leader to run a job now, as a manual slot fenced and recorded like any other",
		func(ctx context.Context, s *session, job string) (string, error) {
			r, err := s.ctl.Trigger(ctx, job, requester(s), time.Now())
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s triggered for slot %s (manual); see `scheduler history %s`", job, r.At.UTC().Format(time.RFC3339Nano), job), nil
		})
}

// requester names who asks, for the record in the control state: the user and the replica name.
func requester(s *session) string {
	user := os.Getenv("USER")
	if user == "" {
		user = "unknown"
	}
	return user + "@" + s.cfg.Node
}
