// Package retention bounds the run ledger. While a replica leads, a Pruner deletes each job's
// finished runs beyond the job's retention (an age, a count, or both), in small batches with a
// pause between them, on a goroutine of its own: the firing path never waits for it, and a
// batch holds the job's fence and the table's locks only briefly.
//
// What a Pruner never deletes is decided by the store (see scheduler.Retention): running runs, runs whose
// slot lies inside the job's catch-up window, which a new leader compares with the slots it
// computes, and the job's last run. It writes with the term's token, so a deposed leader
// prunes nothing once a newer one has raised the job's fence.
package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// Policy is one job's retention.
type Policy struct {
	// Job names the job.
	Job string
	// MaxAge deletes finished runs whose slot is older. Zero: no age limit.
	MaxAge time.Duration
	// MaxRuns keeps the newest MaxRuns finished scheduled runs (manual and backfilled runs go by
	// MaxAge alone). Zero: no count limit.
	MaxRuns int
	// Catchup is the job's catch-up window: runs with slots inside it are kept.
	Catchup time.Duration
}

// Ledger deletes runs. Prune deletes one batch of the runs r lets go and returns how many it
// deleted, and an error wrapping scheduler.ErrFenced when the job's fence is above token.
type Ledger interface {
	Prune(ctx context.Context, token int64, r scheduler.Retention) (int, error)
}

// Defaults of Config.
const (
	DefaultBatch    = 500
	DefaultPause    = 200 * time.Millisecond
	DefaultInterval = 10 * time.Minute
)

// Config configures a Pruner.
type Config struct {
	// Ledger is where runs are deleted. Required.
	Ledger Ledger
	// Policies returns the current retention of every job; it is called once per pass, so a
	// reloaded table takes effect at the next pass. Required.
	Policies func() []Policy
	// Batch is the most rows one delete removes. Default DefaultBatch.
	Batch int
	// Pause is the wait after a delete that removed rows, before the next one. Default
	// DefaultPause.
	Pause time.Duration
	// Interval is the wait before each pass over the jobs, the first included: a new leader's
	// takeover and catch-up come first. Default DefaultInterval.
	Interval time.Duration
	// Now returns the current time, which the age limit and the catch-up window count back
	// from. Default time.Now.
	Now func() time.Time
	// Logger receives pass summaries and errors. Default: no logging.
	Logger *zap.Logger
	// Pruned, if set, is called with the rows each delete removed (when it removed some).
	Pruned func(job string, n int)
}

// Pruner prunes the ledger while its replica leads. Its methods are safe for concurrent use;
// each term calls Run once.
type Pruner struct {
	cfg Config
	lg  *zap.Logger
}

// New returns a Pruner, or an error naming what cfg lacks.
func New(cfg Config) (*Pruner, error) {
	if cfg.Ledger == nil || cfg.Policies == nil {
		return nil, errors.New("retention: a ledger and the jobs' policies are required")
	}
	if cfg.Batch < 0 || cfg.Pause < 0 || cfg.Interval < 0 {
		return nil, fmt.Errorf("retention: batch %d, pause %s, interval %s: want none negative", cfg.Batch, cfg.Pause, cfg.Interval)
	}
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Pause == 0 {
		cfg.Pause = DefaultPause
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	return &Pruner{cfg: cfg, lg: lg.Named("retention")}, nil
}

// Run prunes every job once per Interval with token until ctx ends, and returns nil then. It
// returns an error wrapping scheduler.ErrFenced as soon as a delete is fenced out: the term has ended.
// Other errors of a delete are logged, one line a pass, and the pass goes on with the next job.
func (p *Pruner) Run(ctx context.Context, token int64) error {
	for p.wait(ctx, p.cfg.Interval) {
		if _, err := p.Pass(ctx, token); err != nil {
			return err
		}
	}
	return nil
}

// Pass prunes every job once and returns the rows it deleted. It stops early when ctx ends
// (returning nil) or when a delete is fenced out (returning that error).
func (p *Pruner) Pass(ctx context.Context, token int64) (int, error) {
	start := p.cfg.Now()
	total := 0
	// A store that does not answer fails every job's deletes alike: one line for the pass,
	// naming the first, not one per job.
	var failed failures
	defer failed.log(ctx, p.lg, token)
	for _, pol := range p.cfg.Policies() {
		if pol.MaxAge <= 0 && pol.MaxRuns <= 0 {
			continue
		}
		n, err := p.prune(ctx, token, pol, &failed)
		total += n
		if err != nil {
			return total, err
		}
		if ctx.Err() != nil {
			return total, nil
		}
	}
	if total > 0 {
		p.lg.Info("ledger pruned", zap.Int64("token", token), zap.Int("runs", total),
			zap.Duration("took", p.cfg.Now().Sub(start)))
	}
	return total, nil
}

// prune deletes pol.Job's runs batch by batch until a batch comes back short.
func (p *Pruner) prune(ctx context.Context, token int64, pol Policy, failed *failures) (int, error) {
	now := p.cfg.Now()
	b := scheduler.Retention{Job: pol.Job, Keep: pol.MaxRuns, Protect: now.Add(-pol.Catchup), Limit: p.cfg.Batch}
	if pol.MaxAge > 0 {
		b.Before = now.Add(-pol.MaxAge)
	}
	total := 0
	for {
		n, err := p.cfg.Ledger.Prune(ctx, token, b)
		switch {
		case errors.Is(err, scheduler.ErrFenced):
			return total, fmt.Errorf("prune runs of job %q: %w", pol.Job, err)
		case err != nil:
			failed.add(pol.Job, err)
			return total, nil
		}
		total += n
		if n > 0 {
			p.lg.Debug("runs pruned", zap.String("job", pol.Job), zap.Int64("token", token), zap.Int("runs", n))
			if p.cfg.Pruned != nil {
				p.cfg.Pruned(pol.Job, n)
			}
		}
		if n < b.Limit || !p.wait(ctx, p.cfg.Pause) {
			return total, nil
		}
	}
}

// wait sleeps for d and reports whether ctx is still live.
func (p *Pruner) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// failures are the jobs whose deletes failed in a pass, other than by the fence.
type failures struct {
	jobs  int
	first string
	err   error
}

func (f *failures) add(job string, err error) {
	if f.jobs == 0 {
		f.first, f.err = job, err
	}
	f.jobs++
}

// log writes the pass's failures as one line, unless the pass ended with ctx.
func (f *failures) log(ctx context.Context, lg *zap.Logger, token int64) {
	if f.jobs > 0 && ctx.Err() == nil {
		lg.Warn("prune failed", zap.Int("jobs", f.jobs), zap.String("job", f.first), zap.Int64("token", token), zap.Error(f.err))
	}
}
