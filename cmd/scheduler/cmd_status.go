package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/coord"
	"scheduler/cmd/scheduler/internal/logs"
	"scheduler/internal/control"
	"scheduler/internal/fence"
	"scheduler/internal/status"
)

// session is what the read and control commands connect to: etcd (or, with another backend,
// its connections), and the store if asked.
type session struct {
	cfg   *config.Config
	cli   *clientv3.Client // etcd backend only
	ctl   controlState
	conns coord.Conns // the other backends
	store *fence.Store
	close func()

	// path names the local file, and localValid says whether its jobs are a table (see
	// config.LoadCluster): when not, cfg.Jobs is empty and only the leader's table is known.
	path       string
	localValid bool
}

// connect opens a command's connections; withStore also opens the store.
func (c *cli) connect(ctx context.Context, withStore bool) (*session, error) {
	cl, err := c.loadCluster()
	if err != nil {
		return nil, err
	}
	return c.connectTo(ctx, cl, withStore)
}

// connectTo opens a command's connections to the cluster cl finds.
func (c *cli) connectTo(ctx context.Context, cl *config.Cluster, withStore bool) (s *session, err error) {
	cfg := cl.Config
	defer func() {
		if s != nil {
			s.path, s.localValid = c.configPath, cl.Rest == nil
		}
	}()
	lg, err := newLogger(config.LogConfig{Level: "error", Format: cfg.Log.Format}, c.stderr)
	if err != nil {
		return nil, err
	}
	lg = lg.With(zap.String("node", cfg.Node))
	if cfg.Election.Backend != config.BackendEtcd {
		s, err = connectBackend(ctx, cfg)
	} else {
		s, err = connectEtcd(cfg, lg)
	}
	if err != nil || !withStore {
		return s, err
	}
	if s.store, err = openStore(ctx, cfg, lg); err != nil {
		s.close()
		return nil, err
	}
	closeRest := s.close
	s.close = func() { s.store.Close(); closeRest() }
	return s, nil
}

// connectEtcd opens a command's connections for the etcd backend, which keeps the control state.
func connectEtcd(cfg *config.Config, lg *zap.Logger) (*session, error) {
	cli, err := dialEtcd(cfg, lg)
	if err != nil {
		return nil, err
	}
	s := &session{cfg: cfg, cli: cli, close: func() { cli.Close() }}
	if s.ctl, err = control.New(cli, cfg.Election.Prefix); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func newStatusCmd(c *cli) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the leader (node, token, since), the replicas, and per job its next slot and last run",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			s, err := c.connect(ctx, true)
			if err != nil {
				return err
			}
			defer s.close()
			table := s.table(ctx)
			doc := status.Collect(ctx, s.statusSource(), explainFor(s.cfg), table.Entries(), time.Now())
			doc.Warnings = append(table.Warnings, doc.Warnings...)
			doc.Warnings = append(doc.Warnings, coord.CheckStore(ctx, s.cfg, s.cli, s.conns.Redis, s.store, storeName(s.cfg))...)
			if asJSON {
				enc := json.NewEncoder(c.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(doc)
			}
			printStatus(c.stdout, doc)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

func printStatus(w io.Writer, doc status.Doc) {
	if l := doc.Leader; l != nil {
		since := "unknown"
		if l.Since != nil {
			since = fmt.Sprintf("%s (%s ago)", l.Since.Format(time.RFC3339), time.Since(*l.Since).Round(time.Second))
		}
		fmt.Fprintf(w, "leader:   %s, token %d, since %s\n", l.Node, l.Token, since)
	} else {
		fmt.Fprintln(w, "leader:   none")
	}
	for _, r := range doc.Replicas {
		fmt.Fprintf(w, "replica:  %s version %s table %s http %s\n", logs.Escape(r.Node), logs.Escape(r.Version), logs.Escape(r.TableHash), logs.Escape(r.HTTPAddr))
	}
	for _, warn := range doc.Warnings {
		fmt.Fprintf(w, "warning:  %s\n", logs.Escape(warn))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSCHEDULE\tNEXT\tSTATE\tLAST RUN")
	for _, j := range doc.Jobs {
		next := "-"
		if j.Next != nil {
			next = j.Next.Format(time.RFC3339)
		}
		state := "enabled"
		switch {
		case !j.Enabled:
			state = "disabled"
		case j.Blocked != nil && j.Blocked.Held:
			state = fmt.Sprintf("blocked (fence %d held below token %d)", j.Blocked.Fence, j.Blocked.Token)
		case j.Blocked != nil:
			state = fmt.Sprintf("blocked (fence %d > token %d)", j.Blocked.Fence, j.Blocked.Token)
		case j.Paused:
			state = "paused"
		}
		last := "-"
		if r := j.Last; r != nil {
			last = fmt.Sprintf("%s %s (token %d, %s, attempt %d)", r.ScheduledAt.UTC().Format(time.RFC3339), r.Status, r.Token, r.Node, r.Attempt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", j.Name, j.Schedule+" "+j.Timezone, next, state, last)
	}
	_ = tw.Flush()
}
