// Package startup waits, when a replica starts, for a server it cannot run without and that
// is not there yet: the store after a power cut brought the hosts back before the database,
// or during a database restart. A replica that exited instead would be restarted by its
// service manager until the manager's start limit gave up on it, and then no replica would be
// left once the database came back. What is not going to pass by waiting (a wrong password,
// a database that does not exist, a schema that is behind) still fails at once.
package startup

import (
	"cmp"
	"context"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"
)

// Default backoff between attempts.
const (
	DefaultMin = 500 * time.Millisecond
	DefaultMax = 15 * time.Second
	// DefaultAttempt bounds one attempt: a host that drops packets would otherwise hold one
	// for as long as the kernel retries its connection.
	DefaultAttempt = 10 * time.Second
)

// Server says what Wait waits for and how.
type Server struct {
	// What names the server in log lines ("the store"); Key is the configuration key that
	// points at it ("store.dsn").
	What, Key string
	// Passes reports whether an attempt's error is one to wait out.
	Passes func(error) bool
	// Min and Max bound the backoff between attempts, doubled after each one and jittered by
	// up to a fifth; zero means DefaultMin and DefaultMax. Attempt bounds each attempt; zero
	// means DefaultAttempt.
	Min, Max, Attempt time.Duration
	// After is the clock: time.After when nil.
	After func(time.Duration) <-chan time.Time
	// Logger gets an error line per failed attempt and an info line once the server answers.
	Logger *zap.Logger
}

// Wait calls try until it succeeds, fails with an error s.Passes does not accept, or ctx ends
// (its error is then returned). Between attempts it waits with a jittered exponential backoff.
func Wait[T any](ctx context.Context, s Server, try func(context.Context) (T, error)) (T, error) {
	lo, hi, after, lg := s.Min, s.Max, s.After, s.Logger
	if lo <= 0 {
		lo = DefaultMin
	}
	if hi < lo {
		hi = max(DefaultMax, lo)
	}
	if after == nil {
		after = time.After
	}
	if lg == nil {
		lg = zap.NewNop()
	}
	var first time.Time
	wait := lo
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, cmp.Or(s.Attempt, DefaultAttempt))
		v, err := try(actx)
		cancel()
		if err == nil {
			if attempt > 1 {
				lg.Info(s.What+" answers; starting", zap.String("key", s.Key), zap.Int("attempt", attempt),
					zap.Duration("waited", time.Since(first)))
			}
			return v, nil
		}
		if ctx.Err() != nil {
			return v, ctx.Err()
		}
		if !s.Passes(err) {
			return v, err
		}
		if attempt == 1 {
			first = time.Now()
		}
		d := wait + time.Duration(rand.Int64N(int64(wait)/5+1))
		lg.Error(s.What+" is unreachable; waiting for it before starting", zap.String("key", s.Key),
			zap.Int("attempt", attempt), zap.Duration("retry_in", d), zap.Error(err))
		select {
		case <-after(d):
		case <-ctx.Done():
			return v, ctx.Err()
		}
		wait = min(2*wait, hi)
	}
}
