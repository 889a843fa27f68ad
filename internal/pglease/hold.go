package pglease

import (
	"context"
	"errors"

	"scheduler/internal/lease"
	"scheduler/internal/lease/leaselog"
)

// errGone says that a renewal found the lease no longer held by this term.
var errGone = errors.New("lease no longer held")

// campaignLease returns the lease as the campaign rounds take, hold and
// release it, with the term's hooks as they are now.
//
// A renewal that succeeded proves the lease lives until at least (the time
// the request was sent + TTL) by the database's clock, since the database
// counts the TTL from when it executes the statement, later than the send.
// The term ends a margin before that, on this process's monotonic clock,
// when no later renewal succeeded: before the database can grant the lease
// to anyone else.
func (c *Campaigner) campaignLease() leaselog.Lease[string] {
	return leaselog.Lease[string]{
		Node: c.cfg.Node, Poll: c.cfg.Poll, Holding: &c.holding, Events: c.cfg.Events,
		Renewal: lease.Renewal{TTL: c.cfg.TTL, Margin: c.cfg.Margin, Now: c.cfg.Now, Gone: errGone, OnRenewed: c.cfg.Events.OnRenewed},
		Words:   leaselog.Words{Renewal: "lease renewal", Gone: "lease gone", Release: "release lease"},
		Take:    c.take, Renew: c.renewFor, Release: c.release,
	}
}

// take tries once to take the lease for holder.
func (c *Campaigner) take(ctx context.Context, holder string) (leaselog.Taken[string], error) {
	sent := c.cfg.Now()
	token, ok, wait, err := c.acquire(ctx, holder)
	return leaselog.Taken[string]{OK: ok, Token: token, Of: holder, Sent: sent, Wait: wait}, err
}
