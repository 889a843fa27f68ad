package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"scheduler"
	"scheduler/cmd/scheduler/internal/logs"
	"scheduler/internal/fence"
)

func newLogsCmd(c *cli) *cobra.Command {
	var (
		slot   string
		runID  int64
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "logs JOB [--slot T | --run ID] [-f]",
		Short: "Print a run's kept output from the ledger (the job's latest run by default); -f follows a running one",
		Args:  exactArgs(1, "a job name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var at time.Time
			switch {
			case slot != "" && cmd.Flags().Changed("run"):
				return &usageError{errors.New("logs: --slot and --run name a run each: give one")}
			case slot != "":
				var err error
				if at, err = time.Parse(time.RFC3339, slot); err != nil {
					return &usageError{fmt.Errorf("logs: --slot must be an RFC3339 time such as 2026-03-01T02:00:00Z, got %q", slot)}
				}
			case cmd.Flags().Changed("run") && runID < 1:
				return &usageError{fmt.Errorf("logs: --run must be a run id (see scheduler history %s), got %d", args[0], runID)}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			s, err := c.logsSession(ctx, follow)
			if err != nil {
				return err
			}
			defer s.close()
			stdout := c.stdout
			if isTerminal(stdout) { // a job's escape sequences must not act on the operator's terminal
				tw := logs.NewTerminalWriter(stdout)
				defer func() { _ = tw.Flush() }()
				stdout = tw
			}
			lc := logs.Command{Job: args[0], Store: s.store, Jobs: jobNames(s.cfg.Jobs),
				NoRun:  func(err error) bool { return errors.Is(err, fence.ErrNoRun) },
				Usage:  func(err error) error { return &usageError{err} },
				Leader: s.leaderHTTP, Poll: 500 * time.Millisecond, Stdout: stdout, Stderr: c.stderr}
			run, err := lc.Find(ctx, at, runID)
			if err != nil {
				return err
			}
			if follow && run.Status == scheduler.StatusRunning {
				return lc.Follow(cmd.Context(), run)
			}
			return lc.Print(run)
		},
	}
	cmd.Flags().StringVar(&slot, "slot", "", "the run of this slot (RFC3339)")
	cmd.Flags().Int64Var(&runID, "run", 0, "the run with this id (see history)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow a running run, from the leader, until it ends")
	return cmd
}

// logsSession opens the store for `logs`, checking its schema, and with follow the
// coordinator too, which finds the leader.
func (c *cli) logsSession(ctx context.Context, follow bool) (*session, error) {
	if !follow {
		cfg, err := c.loadConfig()
		if err != nil {
			return nil, err
		}
		store, err := c.openCLIStore(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return &session{cfg: cfg, store: store, close: store.Close}, nil
	}
	s, err := c.connect(ctx, true)
	if err != nil {
		return nil, err
	}
	if err := s.store.CheckSchema(ctx); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// leaderHTTP returns the host:port of the leader's status server, as the leader published it
// in the replica registry; an address on every interface is reached on this host.
func (s *session) leaderHTTP(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	src := s.statusSource()
	replicas, err := src.Replicas(ctx)
	if err != nil {
		return "", err
	}
	el, err := src.Election(ctx, replicas)
	switch {
	case err != nil:
		return "", err
	case el.Leader == nil:
		return "", errors.New("no replica leads")
	}
	for _, r := range replicas {
		if r.Node == el.Leader.Node && r.HTTPAddr != "" {
			host, port, err := net.SplitHostPort(r.HTTPAddr)
			if err != nil {
				return "", fmt.Errorf("leader %s publishes http address %q: %w", r.Node, r.HTTPAddr, err)
			}
			if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
				host = "127.0.0.1"
			}
			return net.JoinHostPort(host, port), nil
		}
	}
	return "", fmt.Errorf("leader %s publishes no http address (http.addr)", el.Leader.Node)
}
