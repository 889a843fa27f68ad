package pglease

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"scheduler/internal/lease"
)

// Observer keeps a follower-side view of who holds a lease, for status
// pages and metrics. It is never evidence that the local node leads: only
// the Campaigner's term context is.
type Observer struct {
	pool *pgxpool.Pool
	name string
	q    queries
	ch   string
	poll time.Duration
	lg   *zap.Logger

	mu  sync.Mutex
	cur Leader
	ok  bool
}

// NewObserver returns an Observer of the lease of election name in schema
// on pool. It re-reads the lease on every grant or release announced, and
// at least every poll (at least 100 ms).
func NewObserver(pool *pgxpool.Pool, schema, name string, poll time.Duration, lg *zap.Logger) (*Observer, error) {
	switch {
	case pool == nil:
		return nil, errors.New("pglease: nil pool")
	case lg == nil:
		return nil, errors.New("pglease: nil logger")
	case schema == "" || name == "":
		return nil, errors.New("pglease: observer: empty schema or name")
	}
	return &Observer{
		pool: pool, name: name, q: newQueries(schema), ch: channel(schema), poll: max(poll, 100*time.Millisecond),
		lg: lg.Named("observer").With(zap.String("lease", name)),
	}, nil
}

// Current returns the holder as last read. ok is false when nobody holds
// the lease or the last read failed.
func (o *Observer) Current() (l Leader, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cur, o.ok
}

// Run keeps the view current until ctx is cancelled, then returns nil.
func (o *Observer) Run(ctx context.Context) error {
	notes := make(chan struct{}, 1)
	lctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { listen(lctx, o.pool, o.ch, notes, o.lg) })
	defer func() {
		stop()
		wg.Wait()
	}()
	failures := 0
	for {
		l, err := readLeader(ctx, o.pool, o.q.read, o.name)
		switch {
		case err == nil:
			failures = 0
			o.set(l, true)
		case errors.Is(err, ErrNoLeader):
			failures = 0
			o.set(Leader{}, false)
		case ctx.Err() == nil:
			failures++
			o.set(Leader{}, false)
			if failures == 1 {
				o.lg.Warn("observe leader", zap.Error(err))
			}
		}
		wait := o.poll
		if err == nil {
			// Look again when the lease would expire without a renewal.
			wait = min(wait, l.Remaining+5*time.Millisecond)
		}
		if !lease.Await(ctx, wait, notes) {
			return nil
		}
	}
}

// set updates the view and logs a change of leader.
func (o *Observer) set(l Leader, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ok != o.ok || l.Token != o.cur.Token {
		o.lg.Info("leader changed", zap.Bool("known", ok), zap.String("leader", l.Node), zap.Int64("token", l.Token))
	}
	o.cur, o.ok = l, ok
}
