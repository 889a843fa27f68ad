package lease

import (
	"context"
	"fmt"
	"time"

	"scheduler"
)

// LeadFunc is what a leader does during one term. ctx is cancelled the
// moment leadership is in doubt, with a *LostError as its cause when the
// campaigner gave leadership up; LeadFunc must stop acting as leader and
// return promptly then. The campaigner releases the lease only after it has
// returned.
type LeadFunc func(ctx context.Context, t scheduler.Term) error

// Reason says why a term ended, fit for log fields and metric labels. The
// values shared with the etcd backend mean the same there.
type Reason string

// Reasons a term ends.
const (
	// ReasonCancelled: Run's context was cancelled (shutdown).
	ReasonCancelled Reason = "cancelled"
	// ReasonLeadReturned: lead returned nil while Run's context was live.
	ReasonLeadReturned Reason = "lead_returned"
	// ReasonLeadFailed: lead returned an error.
	ReasonLeadFailed Reason = "lead_failed"
	// ReasonRenewalDeadline: no renewal succeeded in time; the lease might
	// expire on the server soon, so the term ended before it could.
	ReasonRenewalDeadline Reason = "renewal_deadline"
	// ReasonLeaseGone: a renewal found the lease expired or taken over.
	ReasonLeaseGone Reason = "lease_gone"
)

// Expected reports whether a term that ended for r ended as the replica meant it to (a shutdown,
// or lead returning): its end is then logged at info, and any other at warn, since the replica
// lost the term to a fault (its store, its link to the coordinator, a newer leader).
func (r Reason) Expected() bool { return r == ReasonCancelled || r == ReasonLeadReturned }

// LostError is the cause (context.Cause) of the cancellation of a term's
// context when the campaigner gave leadership up.
type LostError struct {
	// Reason is why.
	Reason Reason
	// At is when the campaigner decided, from the campaigner's clock.
	At time.Time
}

// Error implements error.
func (e *LostError) Error() string {
	return fmt.Sprintf("lease: gave up: %s", e.Reason)
}

// Events are optional hooks, called synchronously from a campaigner's
// goroutines. They must return quickly and must not call back into the
// campaigner. They mean what the etcd backend's hooks of the same names
// mean.
type Events struct {
	// OnElected is called when a term starts, right before lead.
	OnElected func(scheduler.Term)
	// OnLost is called when a term is over: lead has returned.
	OnLost func(scheduler.Term, Reason)
	// OnRenewed is called after every successful grant or renewal of a
	// term's lease, with the time the request was sent and the TTL it
	// extends by.
	OnRenewed func(sent time.Time, ttl time.Duration)
}
