// Package runopts holds what configures the runner of package jobs (Options, with its metric
// Hooks) and the defaults it fills in: the runner's settings, apart from its table.
package runopts

import (
	"cmp"
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/clock"
)

// DefaultClaimAhead is Options.ClaimAhead when it is not set.
const DefaultClaimAhead = time.Second

// Hooks are optional callbacks for metrics; nil fields are skipped. They are called from the
// runner's goroutines and must not block.
type Hooks struct {
	Fired      func(job string, delay time.Duration) // a run started, delay after its slot
	Finished   func(job string, status scheduler.Status, took time.Duration)
	Recorded   func(job string, status scheduler.Status) // a slot recorded without running (skipped, missed)
	CatchupRun func(job string)                          // a run started by catch-up after a takeover
	Fenced     func(job string)                          // the store refused this term's token
	// Blocked reports a job blocked (true) or no longer blocked (false); see jobs.Block.
	Blocked func(job string, blocked bool)
}

// Options configure a Runner.
type Options struct {
	Node string // written into the ledger with every claim
	// Ledger, required, is the store: the runner's claims and outcomes go to it, each attempt's
	// fenced writes (scheduler.Attempt.Fencer) are bound to it, and, if it is a
	// jobs.HoldReader, a takeover asks it which fences are held.
	Ledger scheduler.Ledger
	Clock  clock.Clock // nil: clock.Real
	// Logger receives the runner's lines, with job, slot, run id, attempt and token fields; the
	// node is left to the process logger. nil: none.
	Logger *zap.Logger
	// Paused reports whether a job is paused cluster-wide; nil: never. A paused job's slots are
	// recorded skipped.
	Paused func(job string) bool
	Hooks  Hooks
	// MaxBackoff caps the retry backoff. Default 5m.
	MaxBackoff time.Duration
	// WriteTimeout bounds a ledger write made on behalf of one run. Default 30s.
	WriteTimeout time.Duration
	// ClaimAhead is how long before a slot fires the runner claims it in the ledger, so that
	// firing makes no round trip; a herd is claimed earlier (jobs, claim.go). Default 1s;
	// negative: each slot is claimed when it fires.
	ClaimAhead time.Duration
	// Confirm reports, by a linearizable read of etcd, whether the term with token still holds
	// (nil: it does). When the store refuses one job's write and Confirm says the term holds, only
	// that job is blocked (jobs, blocked.go); when it fails, or is nil, the term ends.
	Confirm func(ctx context.Context, token int64) error
	// Scrub rewrites the output and error of a run before they are written to the ledger, where
	// status and history show them; the daemon passes one that replaces its secrets. nil: none.
	Scrub func(string) string
	// Live is every attempt's scheduler.Attempt.Live, the output of runs in progress; nil: none.
	Live scheduler.LiveOutput
}

// Fill checks o and fills in the defaults of the settings left unset.
func (o *Options) Fill() error {
	if o.Ledger == nil {
		return errors.New("jobs: no ledger")
	}
	if o.Node == "" {
		return errors.New("jobs: no node name")
	}
	o.Clock = cmp.Or[clock.Clock](o.Clock, clock.Real{})
	o.Logger = cmp.Or(o.Logger, zap.NewNop())
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Minute
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	o.ClaimAhead = cmp.Or(o.ClaimAhead, DefaultClaimAhead)
	return nil
}
