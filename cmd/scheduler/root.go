package main

import (
	"fmt"
	"io"

	"scheduler/cmd/scheduler/internal/config"

	"github.com/spf13/cobra"
)

// defaultConfigPath is where commands look for the configuration without --config.
const defaultConfigPath = "configs/scheduler.yaml"

// cli carries what every command needs: the environment and the output streams.
type cli struct {
	environ        []string
	stdout, stderr io.Writer
	configPath     string
}

// loadConfig reads and validates the file named by --config.
func (c *cli) loadConfig() (*config.Config, error) {
	return config.Load(c.configPath, c.environ)
}

// loadCluster reads the file named by --config for a command that works from the cluster's
// view: only a problem in what finds the cluster fails it; the others are a warning on stderr.
func (c *cli) loadCluster() (*config.Cluster, error) {
	cl, err := config.LoadCluster(c.configPath, c.environ)
	if err != nil {
		return nil, err
	}
	if cl.Rest != nil {
		fmt.Fprintf(c.stderr, "warning: %s\n  (only the keys that find the cluster are used; the jobs are the leader's)\n", cl.Rest)
	}
	return cl, nil
}

func newRootCmd(environ []string, stdout, stderr io.Writer) *cobra.Command {
	c := &cli{environ: environ, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:           "scheduler",
		Short:         "Run cron jobs exactly once across a cluster, fenced by etcd leadership tokens",
		SilenceUsage:  true,
		SilenceErrors: true,
		// A bare `scheduler` prints help and is a usage error, like an unknown subcommand.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// The help answers a usage error here, so it goes where errors go.
			cmd.SetOut(stderr)
			defer cmd.SetOut(stdout)
			if err := cmd.Help(); err != nil {
				return err
			}
			return errHelpShown
		},
		Version:                    versionLine(),
		SuggestionsMinimumDistance: 2,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&c.configPath, "config", defaultConfigPath, "configuration file (YAML)")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		newValidateCmd(c),
		newVersionCmd(c),
		newNextCmd(c),
		newRunCmd(c),
		newMigrateCmd(c),
		newStatusCmd(c),
		newHistoryCmd(c),
		newPauseCmd(c),
		newResumeCmd(c),
		newTriggerCmd(c),
		newBackfillCmd(c),
		newOutboxCmd(c),
		newLogsCmd(c),
	)
	return root
}

// exactArgs is cobra.ExactArgs that reports a usage error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return &usageError{fmt.Errorf("%sexpects %s, got %d argument(s)", commandPrefix(cmd), what, len(args))}
		}
		return nil
	}
}
