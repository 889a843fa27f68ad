package redislock

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"scheduler/internal/lease"
	"scheduler/internal/lease/leaselog"
)

// Observer keeps a follower-side view of who holds the lock, for status
// pages and metrics. It is never evidence that the local node leads: only
// the Campaigner's term context is.
type Observer struct {
	cli  redis.UniversalClient
	key  string
	poll time.Duration
	view *leaselog.View[Leader]
}

// NewObserver returns an Observer of the lock at key on cli. It re-reads
// the lock on every grant or release published, and at least every poll
// (at least 100 ms).
func NewObserver(cli redis.UniversalClient, key string, poll time.Duration, lg *zap.Logger) (*Observer, error) {
	switch {
	case cli == nil:
		return nil, errors.New("redislock: nil client")
	case lg == nil:
		return nil, errors.New("redislock: nil logger")
	case key == "":
		return nil, errors.New("redislock: observer: empty key")
	}
	lg = lg.Named("observer").With(zap.String("key", key))
	return &Observer{cli: cli, key: key, poll: max(poll, 100*time.Millisecond),
		view: leaselog.NewView(lg, func(l Leader) (string, int64) { return l.Node, l.Token })}, nil
}

// Current returns the holder as last read. ok is false when nobody holds
// the lock or the last read failed.
func (o *Observer) Current() (l Leader, ok bool) { return o.view.Current() }

// Problems returns what the last read found keeping the election from
// working, each with its remedy (see Leader.Problems).
func (o *Observer) Problems() []string { return o.view.Problems() }

// Run keeps the view current until ctx is cancelled, then returns nil.
func (o *Observer) Run(ctx context.Context) error {
	notes, stop := lease.Listen(ctx, func(ctx context.Context, notes chan<- struct{}) {
		subscribe(ctx, o.cli, eventsChannel(o.key), notes)
	})
	defer stop()
	leaselog.Poll(ctx, o.view, func(ctx context.Context) (Leader, time.Duration, error) {
		l, err := ReadLeader(ctx, o.cli, o.key)
		o.view.SetProblems(l.Problems)
		return l, l.Remaining, err
	}, ErrNoLeader, o.poll, notes)
	return nil
}
