package zkelection

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
)

// errGone says that a check found the candidate node gone.
var errGone = errors.New("candidate node gone")

// hold runs lead for term while it checks the session with renew, and
// returns why the term ended.
//
// An answered request proves that the server heard from the session after
// it was sent, so the session lives until at least (the time the request
// was sent + the session timeout) on the server. The term ends a margin
// before that, on this process's monotonic clock, when no later request
// was answered: before the server can expire the session, delete the
// candidate node and let the next candidate lead. granted is when the granting request was sent.
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

// renew checks the session every timeout/3 until ctx is done, the deadline
// passes without an answered check, or a check finds the node gone; in the
// last two cases it calls lose with a *LostError.
func (c *Campaigner) renew(ctx context.Context, granted time.Time, renew func(context.Context) error,
	lose func(error), lg *zap.Logger) {
	ttl, margin := c.cfg.SessionTimeout, c.cfg.Margin
	every := ttl / 3
	deadline := granted.Add(ttl - margin)
	next := granted.Add(every)
	if c.cfg.Events.OnRenewed != nil {
		c.cfg.Events.OnRenewed(granted, ttl)
	}
	timer := time.NewTimer(every)
	defer timer.Stop()
	failures := 0
	for {
		now := c.cfg.Now()
		if !now.Before(deadline) {
			lg.Warn("session check deadline passed", zap.Time("deadline", deadline), zap.Int("attempt", failures))
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
		err := renew(actx)
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
			lg.Warn("candidate node gone")
			lose(&LostError{Reason: ReasonLeaseGone, At: c.cfg.Now()})
			return
		case ctx.Err() != nil:
			return
		default:
			failures++
			if failures == 1 {
				lg.Warn("session check failed", zap.Error(err))
			} else {
				lg.Debug("session check failed", zap.Int("attempt", failures), zap.Error(err))
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
