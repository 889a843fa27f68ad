package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
)

func newMigrateCmd(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply the SQL migrations to the store; idempotent, safe when several replicas run it at once",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := c.loadConfig()
			if err != nil {
				return err
			}
			lg, err := newLogger(cfg.Log, c.stderr)
			if err != nil {
				return err
			}
			store, err := createStore(cmd.Context(), cfg, lg.With(zap.String("node", cfg.Node)))
			if err != nil {
				return err
			}
			defer store.Close()
			if err := store.Migrate(cmd.Context()); err != nil {
				return fmt.Errorf("migrate %s: %w", storeName(cfg), err)
			}
			fmt.Fprintf(c.stdout, "%s: schema is current\n", storeName(cfg))
			return nil
		},
	}
}
