package leaselog

import (
	"context"
	crand "crypto/rand"
	"time"

	"go.uber.org/zap"

	"scheduler"
	"scheduler/internal/lease"
)

// Lease is a lease-style backend's lease as its campaign rounds take, hold
// and give it up: a lease row, a lock. T is what a term keeps of it.
type Lease[T any] struct {
	// Node is the replica name, the node of every term.
	Node string
	// Poll bounds a follower's wait between two attempts when no
	// announcement arrives.
	Poll time.Duration
	// Renewal holds the term's lease; its Renew is set from Renew, and its
	// TTL bounds every attempt and the release too.
	Renewal lease.Renewal
	// Holding records the term held; Events are its hooks.
	Holding *lease.Holding[T]
	Events  lease.Events
	// Words name the renewal and the release in log lines.
	Words Words
	// Take tries once, within ctx, to take the lease for holder.
	Take func(ctx context.Context, holder string) (Taken[T], error)
	// Renew returns the renewal of the lease a term keeps as of.
	Renew func(of T) func(context.Context) error
	// Release gives the lease up, so that the next follower takes over at
	// once instead of after the TTL.
	Release func(ctx context.Context, of T) error
}

// Taken is the answer to one attempt to take a lease.
type Taken[T any] struct {
	// OK says the lease was granted, with Token, to be kept as Of.
	OK    bool
	Token int64
	Of    T
	// Sent is when the granting request was sent: the lease lives on the
	// server at least a TTL from then.
	Sent time.Time
	// Wait is how long the holder's lease still runs, when not OK.
	Wait time.Duration
}

// Round waits for the lease, leads while it is held, and releases it. It
// returns how long lead ran, zero when it never led, or an error when an
// attempt failed. notes are the grants and releases the server announces.
func (l Lease[T]) Round(ctx context.Context, lead lease.LeadFunc, notes <-chan struct{}, lg *zap.Logger) (time.Duration, error) {
	holder := crand.Text()
	ttl := l.Renewal.TTL
	var got Taken[T]
	for {
		actx, cancel := context.WithTimeout(ctx, ttl)
		t, err := l.Take(actx, holder)
		cancel()
		if err != nil {
			return 0, err
		}
		if t.OK {
			got = t
			break
		}
		// The holder's lease ends in wait by the server's clock, unless
		// renewed; a release or a grant is announced sooner.
		if !lease.Await(ctx, min(max(t.Wait+5*time.Millisecond, 5*time.Millisecond), l.Poll), notes) {
			return 0, nil
		}
	}

	term := scheduler.Term{Token: got.Token, Node: l.Node, Since: l.Renewal.Now()}
	lg = lg.With(zap.Int64("token", got.Token))
	lg.Info("campaign won", zap.Time("deadline", got.Sent.Add(ttl-l.Renewal.Margin)))
	r := l.Renewal
	r.Renew = l.Renew(got.Of)
	held := Serve(ctx, l.Holding, term, got.Of, l.Events, got.Sent, r, l.Words, lead, lg)

	// On a fresh context (ctx may be cancelled: shutdown), bounded by the
	// TTL, after which the lease has expired anyway.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
	defer cancel()
	if err := l.Release(rctx, got.Of); err != nil {
		lg.Warn(l.Words.Release, zap.Error(err))
	}
	return held, nil
}

// Campaign repeats Round until ctx is cancelled, then returns. It logs that
// it campaigns, and listens for the server's announcements with listen (see
// lease.Listen) while it does.
func (l Lease[T]) Campaign(ctx context.Context, lead lease.LeadFunc, listen func(ctx context.Context, notes chan<- struct{}), lg *zap.Logger) {
	lg.Info("campaigning", zap.Duration("ttl", l.Renewal.TTL), zap.Duration("margin", l.Renewal.Margin))
	notes, stop := lease.Listen(ctx, listen)
	defer stop()
	lease.Campaign(ctx, lease.Rounds{Limit: l.Renewal.TTL, Now: l.Renewal.Now, OnFailed: RoundFailed(lg)},
		func(ctx context.Context) (time.Duration, error) { return l.Round(ctx, lead, notes, lg) })
}
