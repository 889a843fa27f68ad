package redislock

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"scheduler/internal/lease"
	"scheduler/internal/lease/leaselog"
)

// errGone says that a renewal found the lock no longer held by this term.
var errGone = errors.New("lock no longer held")

// serve leads term (lease.Holding.Lead): it runs lead while it renews the
// lock with renew, and logs how the term ended. It returns how long the term
// was held.
//
// A renewal that succeeded proves the lock lives until at least (the time
// the request was sent + TTL) on the Redis server, since Redis counts the
// TTL from when it runs the script, later than the send. The term ends a
// margin before that, on this process's monotonic clock, when no later
// renewal succeeded: before Redis can let anyone else take the lock.
// granted is when the granting request was sent. lease.Hold bounds each
// renewal by the deadline even on a client without ContextTimeoutEnabled,
// which would otherwise wait for its own read timeout.
func (c *Campaigner) serve(ctx context.Context, term Term, of string, granted time.Time,
	renew func(context.Context) error, lead LeadFunc, lg *zap.Logger) time.Duration {
	return leaselog.Serve(ctx, &c.holding, term, of, c.cfg.Events, granted, lease.Renewal{
		TTL: c.cfg.TTL, Margin: c.cfg.Margin, Now: c.cfg.Now,
		Renew: renew, Gone: errGone, OnRenewed: c.cfg.Events.OnRenewed,
	}, leaselog.Words{Renewal: "lock renewal", Gone: "lock gone"}, lead, lg)
}
