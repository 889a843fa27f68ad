package main

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"scheduler/cmd/scheduler/internal/backfills"
)

// backfillsOf returns the backfill requests of the operations state c: both controlState
// implementations keep them.
func backfillsOf(c controlState) (backfills.State, error) {
	b, ok := c.(backfills.State)
	if !ok {
		return nil, fmt.Errorf("the operations state %T keeps no backfill requests", c)
	}
	return b, nil
}

// runBackfills works through the backfill requests while the term with token lasts.
func (d *daemon) runBackfills(ctx context.Context, token int64) {
	bs, err := backfillsOf(d.control)
	if err != nil {
		d.lg.Warn("backfills are not served", zap.Error(err))
		return
	}
	backfills.Leader{State: bs, Runner: d.runner, Ledger: d.store, Node: d.cfg.Node, Retention: d.retention,
		Logger: d.lg.Named("backfill").With(zap.Int64("token", token))}.Serve(ctx)
}
