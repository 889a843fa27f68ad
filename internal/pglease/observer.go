package pglease

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"scheduler/internal/lease"
	"scheduler/internal/lease/leaselog"
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
	view *leaselog.View[Leader]
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
	lg = lg.Named("observer").With(zap.String("lease", name))
	return &Observer{
		pool: pool, name: name, q: newQueries(schema), ch: channel(schema), poll: max(poll, 100*time.Millisecond),
		lg: lg, view: leaselog.NewView(lg, func(l Leader) (string, int64) { return l.Node, l.Token }),
	}, nil
}

// Current returns the holder as last read. ok is false when nobody holds
// the lease or the last read failed.
func (o *Observer) Current() (l Leader, ok bool) { return o.view.Current() }

// Problems returns what the last read found keeping the election from
// working, each with its remedy (see Leader.Problems).
func (o *Observer) Problems() []string { return o.view.Problems() }

// Run keeps the view current until ctx is cancelled, then returns nil.
func (o *Observer) Run(ctx context.Context) error {
	notes, stop := lease.Listen(ctx, func(ctx context.Context, notes chan<- struct{}) { listen(ctx, o.pool, o.ch, notes, o.lg) })
	defer stop()
	leaselog.Poll(ctx, o.view, func(ctx context.Context) (Leader, time.Duration, error) {
		l, err := readLeader(ctx, o.pool, o.q.read, o.name)
		o.view.SetProblems(l.Problems)
		return l, l.Remaining, err
	}, ErrNoLeader, o.poll, notes)
	return nil
}
