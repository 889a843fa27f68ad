package redislock

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
)

// errGone says that a renewal found the lock no longer held by this term.
var errGone = errors.New("lock no longer held")

// hold runs lead for term while it renews the lock with renew, and returns
// why the term ended.
//
// A renewal that succeeded proves the lock lives until at least (the time
// the request was sent + TTL) on the Redis server, since Redis counts the
// TTL from when it runs the script, later than the send. The term ends a
// margin before that, on this process's monotonic clock, when no later
// renewal succeeded: before Redis can let anyone else take the lock. granted is when the granting request was sent.
func (c *Campaigner) hold(ctx context.Context, term Term, granted time.Time,
	renew func(context.Context) error, lead LeadFunc, lg *zap.Logger) (Reason, error) {
	guard, lose := context.WithCancelCause(ctx)
	defer lose(context.Canceled)
	var wg sync.WaitGroup
	wg.Go(func() { c.renew(guard, granted, renew, lose, lg) })
	leadErr := lead(guard, term)
	reason := termReason(ctx, guard, leadErr)
	lose(&LostError{Reason: reason, At: c.cfg.Now()})
	wg.Wait()
	return reason, leadErr
}

// renew renews every TTL/3 until ctx is done, the deadline passes without a
// successful renewal, or a renewal finds the lock gone; in the last two
// cases it calls lose with a *LostError.
func (c *Campaigner) renew(ctx context.Context, granted time.Time, renew func(context.Context) error,
	lose func(error), lg *zap.Logger) {
	ttl, margin := c.cfg.TTL, c.cfg.Margin
	every := ttl / 3
	deadline := granted.Add(ttl - margin)
	next := granted.Add(every)
	if c.cfg.Events.OnRenewed != nil {
		c.cfg.Events.OnRenewed(granted, ttl)
	}
	timer := time.NewTimer(every)
	defer timer.Stop()
	failures := 0
	var calls sync.WaitGroup
	defer calls.Wait()
	for {
		now := c.cfg.Now()
		if !now.Before(deadline) {
			lg.Warn("lock renewal deadline passed", zap.Time("deadline", deadline), zap.Int("attempt", failures))
			lose(&LostError{Reason: ReasonRenewalDeadline, At: now})
			return
		}
		if wait := min(next.Sub(now), deadline.Sub(now)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			continue
		}
		sent := c.cfg.Now()
		// An attempt may take until the deadline but no longer: past it the
		// lease is given up whatever the answer.
		actx, cancel := context.WithTimeout(ctx, deadline.Sub(sent))
		err := within(actx, &calls, renew)
		cancel()
		switch {
		case err == nil:
			if d := sent.Add(ttl - margin); d.After(deadline) {
				deadline = d
			}
			next = sent.Add(every)
			failures = 0
			if c.cfg.Events.OnRenewed != nil {
				c.cfg.Events.OnRenewed(sent, ttl)
			}
		case errors.Is(err, errGone):
			lg.Warn("lock gone")
			lose(&LostError{Reason: ReasonLeaseGone, At: c.cfg.Now()})
			return
		case ctx.Err() != nil:
			return
		default:
			failures++
			if failures == 1 {
				lg.Warn("lock renewal failed", zap.Error(err))
			} else {
				lg.Debug("lock renewal failed", zap.Int("attempt", failures), zap.Error(err))
			}
			// Retry soon: every failed renewal brings the deadline closer.
			next = c.cfg.Now().Add(every / 4)
		}
	}
}

// termReason tells why a term ended after lead returned: the first cause
// that cancelled the term, else what lead returned.
func termReason(ctx, term context.Context, leadErr error) Reason {
	var lost *LostError
	switch {
	case errors.As(context.Cause(term), &lost):
		return lost.Reason
	case ctx.Err() != nil:
		return ReasonCancelled
	case leadErr != nil:
		return ReasonLeadFailed
	default:
		return ReasonLeadReturned
	}
}

// within runs call and returns its error, or ctx's once ctx is done first: a
// client without ContextTimeoutEnabled waits for its own read timeout
// instead of ctx's deadline, and the deadline must not wait for it. The
// call goes on in a goroutine of wg until the client gives up.
func within(ctx context.Context, wg *sync.WaitGroup, call func(context.Context) error) error {
	done := make(chan error, 1)
	wg.Go(func() { done <- call(ctx) })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
