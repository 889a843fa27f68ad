package election

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// LeadFunc is what a leader does during one term. ctx is cancelled the
// moment leadership is in doubt, with a *LostError as its cause when the
// campaigner gave leadership up; LeadFunc must stop acting as leader and
// return promptly then. The campaigner resigns only after it has returned.
type LeadFunc func(ctx context.Context, t Term) error

// Campaigner campaigns for leadership of one election, term after term.
type Campaigner struct {
	cli *clientv3.Client
	cfg Config
	lg  *zap.Logger

	running atomic.Bool

	mu      sync.Mutex
	leading *Term
}

const (
	// backoffBase is the first pause after a failed round.
	backoffBase = 100 * time.Millisecond
	// errorLogEvery is how often a run of failed rounds is logged.
	errorLogEvery = 30 * time.Second
)

// New returns a Campaigner for cfg on cli.
func New(cli *clientv3.Client, cfg Config, lg *zap.Logger) (*Campaigner, error) {
	if cli == nil {
		return nil, errors.New("election: nil etcd client")
	}
	if lg == nil {
		return nil, errors.New("election: nil logger")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Campaigner{
		cli: cli,
		cfg: cfg,
		lg:  lg.Named("election").With(zap.String("node", cfg.Node), zap.String("prefix", cfg.Prefix)),
	}, nil
}

// Run campaigns until ctx is cancelled, calling lead for every term won.
//
// Each round grants a new lease, campaigns with it, confirms that the
// campaign really won, calls lead, then resigns and revokes the lease. A
// round ends early on any error, and the next round starts over with a new
// lease (so a new key and a higher token), after a jittered backoff when
// rounds keep failing or terms keep ending quickly. Errors are logged,
// rate-limited, never returned: Run returns nil once ctx is cancelled and the
// last term has been resigned, bounded by the lease TTL. Run must not be
// called again while it runs.
func (c *Campaigner) Run(ctx context.Context, lead LeadFunc) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("election: Run is already running")
	}
	defer c.running.Store(false)
	margin := c.cfg.Margin
	if margin == 0 {
		margin = defaultMargin(c.cfg.TTL) // unless the server raises the TTL
	}
	c.lg.Info("campaigning", zap.Duration("ttl", c.cfg.TTL), zap.Duration("margin", margin))

	var (
		failures   int
		lastLogged time.Time
		suppressed int
	)
	for {
		held, err := c.round(ctx, lead)
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case err != nil:
			failures++
			if now := c.cfg.Now(); now.Sub(lastLogged) >= errorLogEvery {
				c.lg.Warn("campaign round failed", zap.Int("attempt", failures), zap.Int("suppressed", suppressed), zap.Error(err))
				lastLogged, suppressed = now, 0
			} else {
				suppressed++
				c.lg.Debug("campaign round failed", zap.Int("attempt", failures), zap.Error(err))
			}
		case held >= c.cfg.TTL:
			failures = 0
		default:
			// A term shorter than the TTL: back off as after a failure, so
			// that a lead that returns at once cannot spin.
			failures++
		}
		if failures == 0 {
			continue
		}
		t := time.NewTimer(backoff(failures, c.cfg.TTL))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// backoff returns the pause after the n-th failure in a row: doubling from
// backoffBase up to the TTL (at least 1 s), with jitter in [d/2, d) so that
// replicas that failed together do not retry together.
func backoff(n int, ttl time.Duration) time.Duration {
	limit := max(ttl, time.Second)
	d := backoffBase
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d/2 + rand.N(d/2)
}

// Leading returns the term this campaigner holds right now, if any. It is
// a snapshot for status pages and health checks; what a leader does must
// hang off the context passed to LeadFunc instead.
func (c *Campaigner) Leading() (Term, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leading == nil {
		return Term{}, false
	}
	return *c.leading, true
}

// setLeading records the current term, nil for none.
func (c *Campaigner) setLeading(t *Term) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leading = t
}

// lost returns the cause for giving leadership up for reason now.
func (c *Campaigner) lost(reason Reason) error {
	return &LostError{Reason: reason, At: c.cfg.Now()}
}
