package main

import "github.com/spf13/cobra"

func newRunCmd(c *cli) *cobra.Command {
	var node string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the daemon: campaign for leadership, and while leader run the cron table",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDaemon(cmd.Context(), c, node)
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "replica name (overrides `node` in the configuration)")
	return cmd
}
