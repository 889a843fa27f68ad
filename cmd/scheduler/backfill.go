package main

import (
	"context"

	"go.uber.org/zap"

	"scheduler/cmd/scheduler/internal/backfills"
)

// runBackfills works through the backfill requests while the term with token lasts.
func (d *daemon) runBackfills(ctx context.Context, token int64) {
	bs, err := backfills.Of(d.control)
	if err != nil {
		d.lg.Warn("backfills are not served", zap.Error(err))
		return
	}
	backfills.Leader{State: bs, Runner: d.runner, Ledger: d.store, Node: d.cfg.Node, Retention: d.retention,
		Logger: d.lg.Named("backfill").With(zap.Int64("token", token))}.Serve(ctx)
}
