package election

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// renewer keeps one lease alive with KeepAliveOnce and knows, from its own
// bookkeeping, until when the lease is certainly alive on the server.
//
// The etcd client's own keep-alive cannot tell that: Session.Done fires
// between TTL and TTL+1s after the last keep-alive response arrived, which
// is after the server may already have expired the lease and handed the
// election to someone else. The server renews a lease when a renewal
// request reaches it, so a renewal that succeeded proves the lease lives
// until at least (time the request was sent + TTL). The renewer ends the
// term a margin before that.
type renewer struct {
	lease   clientv3.Lease
	id      clientv3.LeaseID
	now     func() time.Time
	onRenew func(sent time.Time, ttl time.Duration)
	lg      *zap.Logger

	every time.Duration // renewal interval for the last TTL seen (renewEvery); only run uses it

	mu   sync.Mutex
	book renewals
}

// renewals is the deadline bookkeeping, kept apart from the I/O so that it
// can be tested with exact times.
type renewals struct {
	margin   time.Duration
	deadline time.Time // zero until the first renewal (or the grant) counted
}

// renewed records that a renewal sent at sent succeeded with TTL ttl, and
// returns the deadline. The deadline never moves backwards: a late answer to
// an older request must not shorten it.
func (r *renewals) renewed(sent time.Time, ttl time.Duration) time.Time {
	if d := sent.Add(ttl - r.margin); d.After(r.deadline) {
		r.deadline = d
	}
	return r.deadline
}

// expired reports whether the deadline has passed at now.
func (r *renewals) expired(now time.Time) bool {
	return !now.Before(r.deadline)
}

// renewEvery returns the renewal interval for a lease of TTL ttl whose term ends margin before
// it could expire, when a renewal's round trip took rtt.
//
// The interval decides how fast a crashed leader is replaced: the server expires the lease TTL
// after the last renewal reached it, and a crash falls on average half an interval after that
// renewal, so the next leader waits TTL − every/2 (plus the server's expiry scan). Renewing
// often buys nothing but a later takeover. It also decides how much room a slow renewal has:
// after a renewal sent at t the term ends at t + TTL − margin, and the next renewal is sent at
// t + every and must be answered before then. The interval is therefore TTL/2, but never more
// than two thirds of what is left of that time after a round trip, so that a third of it
// remains for a retry: at TTL 2 s and the default margin, every 1 s on a fast link, 600 ms when
// a renewal takes 600 ms; at TTL 1 s, 333 ms.
func renewEvery(ttl, margin, rtt time.Duration) time.Duration {
	return max(min(ttl/2, twoThirds(ttl-margin-rtt)), ttl/10)
}

// twoThirds is d*2/3 without the overflow of d*2: the longest lease etcd grants is longer than
// half the longest duration.
func twoThirds(d time.Duration) time.Duration { return d/3*2 + d%3*2/3 }

// newRenewer returns a renewer for lease id, granted with TTL ttl by a
// request sent at granted: the grant counts as the first renewal, and is
// reported to onRenew (which may be nil) like one.
func newRenewer(lease clientv3.Lease, id clientv3.LeaseID, granted time.Time, ttl, margin time.Duration,
	now func() time.Time, onRenew func(time.Time, time.Duration), lg *zap.Logger) *renewer {
	r := &renewer{
		lease:   lease,
		id:      id,
		now:     now,
		onRenew: onRenew,
		lg:      lg,
		book:    renewals{margin: margin},
		every:   renewEvery(ttl, margin, now().Sub(granted)),
	}
	r.book.renewed(granted, ttl)
	if onRenew != nil {
		onRenew(granted, ttl)
	}
	return r
}

// deadline returns when the renewer gives the lease up unless a renewal
// succeeds first.
func (r *renewer) deadline() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.book.deadline
}

// alive reports whether the deadline has not passed at now.
func (r *renewer) alive(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.book.expired(now)
}

// run renews the lease every renewEvery until ctx is done, the deadline passes
// without a successful renewal, or a renewal finds the lease gone. In the
// last two cases it calls lose with a *LostError before returning.
func (r *renewer) run(ctx context.Context, lose func(error)) {
	timer := time.NewTimer(r.every)
	defer timer.Stop()
	next := r.now().Add(r.every)
	failures := 0
	for {
		now := r.now()
		deadline := r.deadline()
		if !now.Before(deadline) {
			r.lg.Warn("lease renewal deadline passed", zap.Time("deadline", deadline), zap.Int("attempt", failures))
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
		sent := r.now()
		// An attempt may take until the deadline but no longer: past it the
		// lease is given up whatever the answer.
		actx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), r.deadline().Sub(sent))
		resp, err := r.lease.KeepAliveOnce(actx, r.id)
		cancel()
		switch {
		case err == nil:
			ttl := time.Duration(resp.TTL) * time.Second
			r.mu.Lock()
			r.book.renewed(sent, ttl)
			r.mu.Unlock()
			r.every = renewEvery(ttl, r.book.margin, r.now().Sub(sent))
			if r.onRenew != nil {
				r.onRenew(sent, ttl)
			}
			failures = 0
			next = sent.Add(r.every)
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			r.lg.Warn("lease gone", zap.Error(err))
			lose(&LostError{Reason: ReasonLeaseGone, At: r.now()})
			return
		case ctx.Err() != nil:
			return
		default:
			failures++
			if failures == 1 {
				r.lg.Warn("lease renewal failed", zap.Error(err))
			} else {
				r.lg.Debug("lease renewal failed", zap.Int("attempt", failures), zap.Error(err))
			}
			// Retry soon: every failed renewal brings the deadline closer.
			next = r.now().Add(r.every / 4)
		}
	}
}
