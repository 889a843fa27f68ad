package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/logs"
	"scheduler/internal/fence"
)

// messageJSON is an outbox message as `outbox --json` and `history --json` print it. The body
// is left out: it can be long, and `outbox` is for following deliveries.
type messageJSON struct {
	Key         string     `json:"key"`
	Job         string     `json:"job"`
	ScheduledAt time.Time  `json:"scheduled_at"`
	Manual      bool       `json:"manual"`
	Token       int64      `json:"token"`
	Kind        string     `json:"kind"`
	Destination string     `json:"destination"`
	Subject     string     `json:"subject"`
	Status      string     `json:"status"`
	Attempts    int        `json:"attempts"`
	NextAttempt time.Time  `json:"next_attempt_at"`
	ClaimToken  int64      `json:"claim_token"`
	LastError   string     `json:"last_error"`
	Created     time.Time  `json:"created_at"`
	Updated     time.Time  `json:"updated_at"`
	Delivered   *time.Time `json:"delivered_at"` // nil until delivered
}

func toMessageJSON(msgs []scheduler.Message) []messageJSON {
	out := make([]messageJSON, 0, len(msgs))
	for _, m := range msgs {
		j := messageJSON{Key: m.Key, Job: m.Job, ScheduledAt: m.ScheduledAt.UTC(), Manual: m.Manual, Token: m.Token,
			Kind: string(m.Kind), Destination: m.Destination, Subject: m.Subject, Status: string(m.Status),
			Attempts: m.Attempts, NextAttempt: m.NextAttempt.UTC(), ClaimToken: m.ClaimToken, LastError: m.LastError,
			Created: m.Created.UTC(), Updated: m.Updated.UTC()}
		if !m.Delivered.IsZero() {
			d := m.Delivered.UTC()
			j.Delivered = &d
		}
		out = append(out, j)
	}
	return out
}

// withCLIStore runs fn on the configured store, opened for one command.
func (c *cli) withCLIStore(cmd *cobra.Command, fn func(ctx context.Context, store *fence.Store) error) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	store, err := c.openCLIStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	return fn(ctx, store)
}

// openCLIStore opens the store of cfg for a command, after checking its schema: a store that
// was never migrated would fail a query with "relation does not exist" or "no such table",
// and the check says what to do instead.
func (c *cli) openCLIStore(ctx context.Context, cfg *config.Config) (*fence.Store, error) {
	lg, err := newLogger(config.LogConfig{Level: "error", Format: cfg.Log.Format}, c.stderr)
	if err != nil {
		return nil, err
	}
	store, err := openStore(ctx, cfg, lg.With(zap.String("node", cfg.Node)))
	if err != nil {
		return nil, err
	}
	if err := store.CheckSchema(ctx); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

func newOutboxCmd(c *cli) *cobra.Command {
	var (
		status string
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "outbox [--status pending|sending|dead|delivered] [--json]",
		Short: "Print the outbox's messages, oldest first",
		Args:  exactArgs(0, "no arguments (or the retry subcommand)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch scheduler.MessageStatus(status) {
			case "", scheduler.MessagePending, scheduler.MessageSending, scheduler.MessageDead, scheduler.MessageDelivered:
			default:
				return &usageError{fmt.Errorf("outbox: --status must be pending, sending, dead or delivered, got %q", status)}
			}
			if limit < 1 {
				return &usageError{fmt.Errorf("outbox: --limit must be at least 1, got %d", limit)}
			}
			return c.withCLIStore(cmd, func(ctx context.Context, store *fence.Store) error {
				msgs, err := store.Outbox(ctx, scheduler.MessageStatus(status), limit)
				if err != nil {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(c.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(toMessageJSON(msgs))
				}
				return printMessages(c.stdout, msgs)
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only the messages with this status (default: all)")
	cmd.Flags().IntVar(&limit, "limit", 100, "how many messages")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the messages as a JSON array")
	cmd.AddCommand(&cobra.Command{
		Use:   "retry KEY",
		Short: "Queue a dead message again",
		Args:  exactArgs(1, "a message key"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withCLIStore(cmd, func(ctx context.Context, store *fence.Store) error {
				if err := store.RetryOutbox(ctx, args[0]); err != nil {
					if errors.Is(err, fence.ErrNotDead) {
						return fmt.Errorf("%w (see scheduler outbox --status dead)", err)
					}
					return err
				}
				_, err := fmt.Fprintf(c.stdout, "message %s queued again\n", args[0])
				return err
			})
		},
	})
	return cmd
}

// printMessages prints msgs as a table.
func printMessages(w io.Writer, msgs []scheduler.Message) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tJOB\tSLOT\tKIND\tDESTINATION\tSTATUS\tATTEMPTS\tUPDATED\tLAST ERROR")
	for _, m := range msgs {
		// A job chose the destination, a receiver worded the error: shown, never acted on.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", m.Key, m.Job, m.ScheduledAt.UTC().Format(time.RFC3339),
			m.Kind, logs.Escape(m.Destination), m.Status, m.Attempts, m.Updated.UTC().Format(time.RFC3339), logs.Escape(m.LastError))
	}
	return tw.Flush()
}

// runJSON is a run as `history --json` prints it: the run's fields and the messages its slot
// queued.
type runJSON struct {
	scheduler.Run
	Outbox []messageJSON `json:"outbox"`
}

// runsWithOutbox adds to each run the messages of its slot.
func runsWithOutbox(ctx context.Context, store *fence.Store, runs []scheduler.Run) ([]runJSON, error) {
	out := make([]runJSON, 0, len(runs))
	for _, r := range runs {
		msgs, err := store.SlotMessages(ctx, r.Job, r.ScheduledAt, r.Manual)
		if err != nil {
			return nil, err
		}
		out = append(out, runJSON{Run: r, Outbox: toMessageJSON(msgs)})
	}
	return out, nil
}
