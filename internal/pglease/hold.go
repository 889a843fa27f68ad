package pglease

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"scheduler/internal/lease"
	"scheduler/internal/lease/leaselog"
)

// errGone says that a renewal found the lease no longer held by this term.
var errGone = errors.New("lease no longer held")

// serve leads term (lease.Holding.Lead): it runs lead while it renews the
// lease with renew, and logs how the term ended. It returns how long the
// term was held.
//
// A renewal that succeeded proves the lease lives until at least (the time
// the request was sent + TTL) by the database's clock, since the database
// counts the TTL from when it executes the statement, later than the send.
// The term ends a margin before that, on this process's monotonic clock,
// when no later renewal succeeded: before the database can grant the lease
// to anyone else. granted is when the granting request was sent.
func (c *Campaigner) serve(ctx context.Context, term Term, of string, granted time.Time,
	renew func(context.Context) error, lead LeadFunc, lg *zap.Logger) time.Duration {
	return leaselog.Serve(ctx, &c.holding, term, of, c.cfg.Events, granted, lease.Renewal{
		TTL: c.cfg.TTL, Margin: c.cfg.Margin, Now: c.cfg.Now,
		Renew: renew, Gone: errGone, OnRenewed: c.cfg.Events.OnRenewed,
	}, leaselog.Words{Renewal: "lease renewal", Gone: "lease gone"}, lead, lg)
}
