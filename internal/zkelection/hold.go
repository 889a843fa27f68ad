package zkelection

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"scheduler"
	"scheduler/internal/lease"
	"scheduler/internal/lease/leaselog"
)

// errGone says that a check found the candidate node gone.
var errGone = errors.New("candidate node gone")

// serve leads term (lease.Holding.Lead): it runs lead while it checks the
// session with renew, and logs how the term ended. It returns how long the
// term was held.
//
// An answered request proves that the server heard from the session after
// it was sent, so the session lives until at least (the time the request
// was sent + the session timeout) on the server. The term ends a margin
// before that, on this process's monotonic clock, when no later request
// was answered: before the server can expire the session, delete the
// candidate node and let the next candidate lead. granted is when the
// granting request was sent.
func (c *Campaigner) serve(ctx context.Context, term scheduler.Term, of candidacy, granted time.Time,
	renew func(context.Context) error, lead lease.LeadFunc, lg *zap.Logger) time.Duration {
	return leaselog.Serve(ctx, &c.holding, term, of, c.cfg.Events, granted, lease.Renewal{
		TTL: c.cfg.SessionTimeout, Margin: c.cfg.Margin, Now: c.cfg.Now,
		Renew: renew, Gone: errGone, OnRenewed: c.cfg.Events.OnRenewed,
	}, leaselog.Words{Renewal: "session check", Gone: "candidate node gone"}, lead, lg)
}
