package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/kinds"

	"go.uber.org/zap"
)

// reloadOnHUP re-reads the configuration on SIGHUP: a valid one replaces the cron table, an
// invalid one is logged with the messages of `validate` and the old table keeps running.
func (d *daemon) reloadOnHUP(ctx context.Context) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			d.reload(ctx)
		}
	}
}

// reload replaces the table with the configuration's, read and built by config.LoadForRun as at the
// start: the runner's table, the one /status shows, its hash and the job labels
// of the metrics, together under d.mu; then the replica's entry in the registry is republished. The other
// settings were read at start and keep their values; those that changed are named, for a restart
// to apply them.
func (d *daemon) reload(context.Context) {
	l, err := config.LoadForRun(d.path, d.environ, kinds.CurrentUserSwitch())
	if err == nil {
		err = d.swapTable(l)
	}
	if err != nil {
		d.m.Reloaded(false)
		d.lg.Error("reload rejected; the current table keeps running", zap.String("config", d.path), zap.Error(err))
		return
	}
	_ = l.OverrideNode(d.node) // the flag was checked at start
	cfg := l.Config
	d.m.Reloaded(true)
	d.reg.Republish()
	d.lg.Info("configuration reloaded", zap.Int("jobs", len(cfg.Jobs)), zap.String("table_hash", l.Hash))
	if keys := d.cfg.RestartKeys(cfg); len(keys) > 0 {
		d.lg.Warn("changed settings apply only after a restart", zap.Strings("keys", keys))
	}
}

// swapTable gives the runner l's table and makes it the one the daemon shows, under d.mu: a
// reader of d.table never sees the runner on one table and /status or the replica's hash on
// another. It changes nothing when the runner refuses the table.
func (d *daemon) swapTable(l *config.Loaded) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.runner.SetTable(l.Table); err != nil {
		return err
	}
	d.jobs, d.hash = l.Config.Jobs, l.Hash
	d.setNames(d.jobs)
	// Validate admitted the per-job mode, so the metrics cannot refuse it.
	_ = d.m.SetJobs(l.Config.Metrics.PerJob, jobNames(l.Config.Jobs))
	return nil
}
