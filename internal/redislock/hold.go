package redislock

import (
	"context"
	"errors"
	"fmt"

	"scheduler/internal/lease"
	"scheduler/internal/lease/leaselog"
)

// errGone says that a renewal found the lock no longer held by this term.
var errGone = errors.New("lock no longer held")

// campaignLease returns the lock as the campaign rounds take, hold and
// release it, with the term's hooks as they are now.
//
// A renewal that succeeded proves the lock lives until at least (the time
// the request was sent + TTL) on the Redis server, since Redis counts the
// TTL from when it runs the script, later than the send. The term ends a
// margin before that, on this process's monotonic clock, when no later
// renewal succeeded: before Redis can let anyone else take the lock.
// lease.Hold bounds each renewal by the deadline even on a client without
// ContextTimeoutEnabled, which would otherwise wait for its own read
// timeout.
func (c *Campaigner) campaignLease() leaselog.Lease[string] {
	return leaselog.Lease[string]{
		Node: c.cfg.Node, Poll: c.cfg.Poll, Holding: &c.holding, Events: c.cfg.Events,
		Renewal: lease.Renewal{TTL: c.cfg.TTL, Margin: c.cfg.Margin, Now: c.cfg.Now, Gone: errGone, OnRenewed: c.cfg.Events.OnRenewed},
		Words:   leaselog.Words{Renewal: "lock renewal", Gone: "lock gone", Release: "release lock"},
		Take:    c.take, Renew: c.renewFor, Release: c.release,
	}
}

// take reads the token floor, then tries once to take the lock for holder;
// the term keeps the lock's value.
func (c *Campaigner) take(ctx context.Context, holder string) (leaselog.Taken[string], error) {
	floor, err := c.cfg.Floor(ctx)
	if err != nil {
		return leaselog.Taken[string]{}, fmt.Errorf("read token floor: %w", err)
	}
	sent := c.cfg.Now()
	token, ok, wait, err := c.acquire(ctx, holder, floor)
	return leaselog.Taken[string]{OK: ok, Token: token, Of: lockValue(token, holder, c.cfg.Node), Sent: sent, Wait: wait}, err
}
