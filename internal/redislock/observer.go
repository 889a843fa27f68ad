package redislock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"scheduler/internal/lease"
)

// Observer keeps a follower-side view of who holds the lock, for status
// pages and metrics. It is never evidence that the local node leads: only
// the Campaigner's term context is.
type Observer struct {
	cli  redis.UniversalClient
	key  string
	poll time.Duration
	lg   *zap.Logger

	mu  sync.Mutex
	cur Leader
	ok  bool
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
	return &Observer{cli: cli, key: key, poll: max(poll, 100*time.Millisecond), lg: lg.Named("observer").With(zap.String("key", key))}, nil
}

// Current returns the holder as last read. ok is false when nobody holds
// the lock or the last read failed.
func (o *Observer) Current() (l Leader, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cur, o.ok
}

// Run keeps the view current until ctx is cancelled, then returns nil.
func (o *Observer) Run(ctx context.Context) error {
	notes := make(chan struct{}, 1)
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { subscribe(sctx, o.cli, eventsChannel(o.key), notes) })
	defer func() {
		stop()
		wg.Wait()
	}()
	failures := 0
	for {
		l, err := ReadLeader(ctx, o.cli, o.key)
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
		if err == nil && l.Remaining > 0 {
			// Look again when the lock would expire without a renewal.
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
