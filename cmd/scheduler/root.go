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

func newRootCmd(environ []string, stdout, stderr io.Writer) *cobra.Command {
	c := &cli{environ: environ, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:           "scheduler",
		Short:         "Run cron jobs exactly once across a cluster, fenced by etcd leadership tokens",
		SilenceUsage:  true,
		SilenceErrors: true,
		// A bare `scheduler` prints help; an unknown subcommand is a usage error.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &usageError{fmt.Errorf("unknown command %q (see scheduler --help)", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&c.configPath, "config", defaultConfigPath, "configuration file (YAML)")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
	})
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
		newOutboxCmd(c),
		newLogsCmd(c),
	)
	return root
}

// exactArgs is cobra.ExactArgs that reports a usage error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return &usageError{fmt.Errorf("%s: expects %s, got %d argument(s)", cmd.CommandPath(), what, len(args))}
		}
		return nil
	}
}
