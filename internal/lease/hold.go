package lease

import (
	"context"
	"errors"
	"sync"
	"time"

	"scheduler"
)

// Renewal says how Hold keeps a term's lease alive.
type Renewal struct {
	// TTL is how long a grant or an answered renewal keeps the lease on the
	// server, counted from when the server handles the request, which is
	// later than its send.
	TTL time.Duration
	// Margin is how long before the lease could expire on the server the
	// term ends when no renewal was answered. It must be below TTL.
	Margin time.Duration
	// Now reads the clock; it must keep Go's monotonic reading.
	Now func() time.Time
	// Renew renews the lease once. An error matching Gone (errors.Is) says
	// the lease is no longer this term's; any other error is retried.
	Renew func(context.Context) error
	// Gone is the error by which Renew says the lease is lost.
	Gone error
	// OnRenewed, when set, is called after the grant and after every
	// answered renewal (see Events.OnRenewed).
	OnRenewed func(sent time.Time, ttl time.Duration)
	// OnDeadline, when set, is called when the deadline passed with no
	// renewal answered, with the deadline and the failures since the last
	// answer.
	OnDeadline func(deadline time.Time, attempt int)
	// OnGone, when set, is called when a renewal found the lease lost.
	OnGone func()
	// OnFailed, when set, is called after every failed renewal, with the
	// failures in a row so far.
	OnFailed func(attempt int, err error)
}

// Hold runs lead for term while it renews the lease with r, and returns why
// the term ended and what lead returned.
//
// An answered renewal proves the lease lives until at least (the time the
// request was sent + TTL) on the server. The term ends a margin before that,
// on this process's monotonic clock, when no later renewal was answered:
// before the server can let anyone else lead. granted is when the granting
// request was sent.
func Hold(ctx context.Context, term scheduler.Term, granted time.Time, r Renewal, lead LeadFunc) (Reason, error) {
	guard, lose := context.WithCancelCause(ctx)
	defer lose(context.Canceled)
	var wg sync.WaitGroup
	wg.Go(func() { r.renew(guard, granted, lose) })
	leadErr := lead(guard, term)
	reason := TermReason(ctx, guard, leadErr)
	lose(&LostError{Reason: reason, At: r.Now()})
	wg.Wait()
	return reason, leadErr
}

// renew renews every TTL/3 until ctx is done, the deadline passes without a
// successful renewal, or a renewal finds the lease gone; in the last two
// cases it calls lose with a *LostError.
func (r Renewal) renew(ctx context.Context, granted time.Time, lose func(error)) {
	ttl, margin := r.TTL, r.Margin
	every := ttl / 3
	deadline := granted.Add(ttl - margin)
	next := granted.Add(every)
	if r.OnRenewed != nil {
		r.OnRenewed(granted, ttl)
	}
	timer := time.NewTimer(every)
	defer timer.Stop()
	var calls sync.WaitGroup
	defer calls.Wait()
	failures := 0
	for {
		now := r.Now()
		if !now.Before(deadline) {
			if r.OnDeadline != nil {
				r.OnDeadline(deadline, failures)
			}
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
		sent := r.Now()
		// An attempt may take until the deadline but no longer: past it the
		// lease is given up whatever the answer.
		actx, cancel := context.WithTimeout(ctx, deadline.Sub(sent))
		err := within(actx, &calls, r.Renew)
		cancel()
		switch {
		case err == nil:
			if d := sent.Add(ttl - margin); d.After(deadline) {
				deadline = d
			}
			next = sent.Add(every)
			failures = 0
			if r.OnRenewed != nil {
				r.OnRenewed(sent, ttl)
			}
		case r.Gone != nil && errors.Is(err, r.Gone):
			if r.OnGone != nil {
				r.OnGone()
			}
			lose(&LostError{Reason: ReasonLeaseGone, At: r.Now()})
			return
		case ctx.Err() != nil:
			return
		default:
			failures++
			if r.OnFailed != nil {
				r.OnFailed(failures, err)
			}
			// Retry soon: every failed renewal brings the deadline closer.
			next = r.Now().Add(every / 4)
		}
	}
}

// within runs call and returns its error, or ctx's once ctx is done first: a
// client that does not honour a context's deadline (a Redis client without
// ContextTimeoutEnabled waits for its own read timeout) must not hold the
// step-down back. The call goes on in a goroutine of wg until it returns.
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

// TermReason tells why a term ended after lead returned: the first cause
// that cancelled the term (ctx, the campaign's, or term, the term's own),
// else what lead returned.
func TermReason(ctx, term context.Context, leadErr error) Reason {
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
