package pglease

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"scheduler"
	"scheduler/internal/lease"
)

// ErrNotConfirmed says that Confirm found the term no longer current.
var ErrNotConfirmed = errors.New("pglease: term not confirmed")

// Campaigner campaigns for the lease of one election, term after term.
type Campaigner struct {
	pool *pgxpool.Pool
	cfg  Config
	q    queries
	ch   string
	lg   *zap.Logger

	running atomic.Bool

	holding lease.Holding[string] // the current term, with its holder ID
}

// New returns a Campaigner for cfg on pool, a pool on the store's Postgres
// database with room for one connection held by a listener. The schema
// must have the store's migrations applied.
func New(pool *pgxpool.Pool, cfg Config, lg *zap.Logger) (*Campaigner, error) {
	if pool == nil {
		return nil, errors.New("pglease: nil pool")
	}
	if lg == nil {
		return nil, errors.New("pglease: nil logger")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Campaigner{
		pool: pool,
		cfg:  cfg,
		q:    newQueries(cfg.Schema),
		ch:   channel(cfg.Schema),
		lg:   lg.Named("election").With(zap.String("node", cfg.Node), zap.String("lease", cfg.Name)),
	}, nil
}

// Run campaigns until ctx is cancelled, calling lead for every term won.
// Errors are logged, rate-limited, never returned: Run returns nil once ctx
// is cancelled and the last term has been released. Run must not be called
// again while it runs.
func (c *Campaigner) Run(ctx context.Context, lead lease.LeadFunc) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("pglease: Run is already running")
	}
	defer c.running.Store(false)
	c.campaignLease().Campaign(ctx, lead, func(ctx context.Context, notes chan<- struct{}) { listen(ctx, c.pool, c.ch, notes, c.lg) }, c.lg)
	return nil
}

// Confirm asks the database whether the term with token is still this
// campaigner's: it holds a term with that token and the lease row still
// names it, unexpired by the database's clock. nil means confirmed. The
// answer is a snapshot: what a leader does still hangs off the term's
// context.
func (c *Campaigner) Confirm(ctx context.Context, token int64) error {
	holder, err := c.holding.Check(token, ErrNotConfirmed)
	if err != nil {
		return err
	}
	var ok bool
	if err := c.pool.QueryRow(ctx, c.q.confirm, c.cfg.Name, holder, token).Scan(&ok); err != nil {
		return fmt.Errorf("confirm term %d of lease %q: %w", token, c.cfg.Name, err)
	}
	if !ok {
		return fmt.Errorf("confirm term %d of lease %q: the lease is held by another term or expired: %w", token, c.cfg.Name, ErrNotConfirmed)
	}
	return nil
}

// Leading returns the term this campaigner holds right now, if any: a
// snapshot for status pages; what a leader does hangs off lead's context.
func (c *Campaigner) Leading() (scheduler.Term, bool) { return c.holding.Leading() }
