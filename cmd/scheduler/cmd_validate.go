package main

import (
	"fmt"

	"scheduler/cmd/scheduler/internal/config"

	"github.com/spf13/cobra"
)

func newValidateCmd(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the configuration and every job's schedule, zone, type and parameters, connecting nowhere",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The table `run` starts with, built the same way: validate refuses what run would.
			l, err := config.LoadTable(c.configPath, c.environ)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "%s: valid, %d job(s)\n", c.configPath, len(l.Table))
			return nil
		},
	}
}
