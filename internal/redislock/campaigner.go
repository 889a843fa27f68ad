package redislock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"scheduler"
	"scheduler/internal/lease"
)

// ErrNotConfirmed says that Confirm found the term no longer current.
var ErrNotConfirmed = errors.New("redislock: term not confirmed")

// Campaigner campaigns for one lock, term after term.
type Campaigner struct {
	cli redis.UniversalClient
	cfg Config
	lg  *zap.Logger

	running atomic.Bool

	holding lease.Holding[string] // the current term, with its lock value
}

// New returns a Campaigner for cfg on cli. A client with
// ContextTimeoutEnabled honours the deadlines of takes and releases too;
// renewals keep their deadline either way.
func New(cli redis.UniversalClient, cfg Config, lg *zap.Logger) (*Campaigner, error) {
	if cli == nil {
		return nil, errors.New("redislock: nil client")
	}
	if lg == nil {
		return nil, errors.New("redislock: nil logger")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Campaigner{
		cli: cli,
		cfg: cfg,
		lg:  lg.Named("election").With(zap.String("node", cfg.Node), zap.String("key", cfg.Key)),
	}, nil
}

// Run campaigns until ctx is cancelled, calling lead for every term won.
// Errors are logged, rate-limited, never returned: Run returns nil once ctx
// is cancelled and the last term has been released. Run must not be called
// again while it runs.
func (c *Campaigner) Run(ctx context.Context, lead lease.LeadFunc) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("redislock: Run is already running")
	}
	defer c.running.Store(false)
	c.campaignLease().Campaign(ctx, lead, func(ctx context.Context, notes chan<- struct{}) {
		subscribe(ctx, c.cli, eventsChannel(c.cfg.Key), notes)
	}, c.lg)
	return nil
}

// Confirm asks Redis whether the term with token is still this
// campaigner's: it holds a term with that token and the lock still holds
// its value. nil means confirmed. Redis is not consensus: the answer comes
// from the server this client talks to, and is a snapshot; what a leader
// does still hangs off the term's context, and the fence decides.
func (c *Campaigner) Confirm(ctx context.Context, token int64) error {
	value, err := c.holding.Check(token, ErrNotConfirmed)
	if err != nil {
		return err
	}
	got, err := c.cli.Get(ctx, c.cfg.Key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return fmt.Errorf("confirm term %d of lock %s: the lock is gone: %w", token, c.cfg.Key, ErrNotConfirmed)
	case err != nil:
		return fmt.Errorf("confirm term %d of lock %s: %w", token, c.cfg.Key, err)
	case got != value:
		return fmt.Errorf("confirm term %d of lock %s: the lock is held by another term: %w", token, c.cfg.Key, ErrNotConfirmed)
	}
	return nil
}

// Leading returns the term this campaigner holds right now, if any: a
// snapshot for status pages; what a leader does hangs off lead's context.
func (c *Campaigner) Leading() (scheduler.Term, bool) { return c.holding.Leading() }

// subscribe signals notes on every message published on ch (at most once per
// lease.MinNoteGap: whoever can PUBLISH could flood it), until ctx is done. The client resubscribes by itself after a lost connection; a
// message missed meanwhile costs a follower at most one Poll.
func subscribe(ctx context.Context, cli redis.UniversalClient, ch string, notes chan<- struct{}) {
	ps := cli.Subscribe(ctx, ch)
	defer func() { _ = ps.Close() }()
	msgs := ps.Channel()
	pace := lease.NewPacer(notes)
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-msgs:
			if !ok {
				return
			}
			pace.Mark()
		}
	}
}
