package main

import (
	"cmp"
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/settle"
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
// of the metrics, together under d.mu; then the replica's entry in the registry is republished,
// and the console's admin token replaced by the file's. The other settings were read at start
// and keep their values; those that changed are named, for a restart to apply them.
func (d *daemon) reload(ctx context.Context) {
	l, err := d.loadSettled(ctx)
	var removed []string
	if err == nil {
		// The new table's credentials are scrubbed before its jobs run (and the old ones still).
		d.scrub.Add(append(l.Config.Secrets(), l.Config.Credentials()...)...)
		removed, err = d.swapTable(l)
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
	if len(removed) > 0 {
		d.lg.Warn("reload removed jobs from the table", zap.Strings("jobs", removed))
	}
	if d.http != nil {
		// A rotated token must refuse the old one at once: a reload applies it.
		switch changed, err := d.http.SetAdminToken(cfg.HTTP.AdminToken); {
		case err != nil:
			d.lg.Error("admin token not applied", zap.String("key", "http.admin_token_file"), zap.Error(err))
		case changed:
			d.lg.Info("admin token replaced", zap.String("key", "http.admin_token_file"), zap.Bool("console_actions", cfg.HTTP.AdminToken != ""))
		}
	}
	if keys := d.cfg.RestartKeys(cfg); len(keys) > 0 {
		d.lg.Warn("changed settings apply only after a restart", zap.Strings("keys", keys))
	}
}

// Bounds of waiting for a configuration file still being written (settle.Wait).
const reloadQuiet, reloadSettle = 200 * time.Millisecond, 5 * time.Second

// loadSettled loads the configuration as at the start once its file has stopped changing
// (settle.Load): a file written in place is valid at many points of its writing.
func (d *daemon) loadSettled(ctx context.Context) (*config.Loaded, error) {
	return settle.Load(ctx, d.path, cmp.Or(d.quiet, reloadQuiet), reloadSettle, func() (*config.Loaded, error) {
		return config.LoadForRun(d.path, d.environ, kinds.CurrentUserSwitch())
	})
}

// swapTable gives the runner l's table and makes it the one the daemon shows, under d.mu: a
// reader of d.table never sees the runner on one table and /status or the replica's hash on
// another. It changes nothing when the runner refuses the table, and returns the jobs the new
// table no longer has.
func (d *daemon) swapTable(l *config.Loaded) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.runner.SetTable(l.Table); err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for _, j := range l.Config.Jobs {
		kept[j.Name] = true
	}
	var removed []string
	for _, j := range d.jobs {
		if !kept[j.Name] {
			removed = append(removed, j.Name)
		}
	}
	d.jobs, d.hash = l.Config.Jobs, l.Hash
	d.setNames(d.jobs)
	// Validate admitted the per-job mode, so the metrics cannot refuse it.
	_ = d.m.SetJobs(l.Config.Metrics.PerJob, jobNames(l.Config.Jobs))
	return removed, nil
}
