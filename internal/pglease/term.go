package pglease

import (
	"context"
	"fmt"
	"time"

	"scheduler"
)

// Term is one leadership term: from a granted lease until lead returns. It is
// the scheduler's one Term, which every backend hands to the leader.
type Term = scheduler.Term

// LeadFunc is what a leader does during one term. ctx is cancelled the
// moment leadership is in doubt, with a *LostError as its cause when the
// campaigner gave leadership up; LeadFunc must stop acting as leader and
// return promptly then. The campaigner releases the lease only after it has
// returned.
type LeadFunc func(ctx context.Context, t Term) error

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
	// expire in the database soon, so the term ended before it could.
	ReasonRenewalDeadline Reason = "renewal_deadline"
	// ReasonLeaseGone: a renewal found the lease expired or taken over.
	ReasonLeaseGone Reason = "lease_gone"
)

// LostError is the cause (context.Cause) of the cancellation of a term's
// context when the campaigner gave leadership up.
type LostError struct {
	// Reason is why.
	Reason Reason
	// At is when the campaigner decided, from Config.Now.
	At time.Time
}

// Error implements error.
func (e *LostError) Error() string {
	return fmt.Sprintf("pglease: gave up: %s", e.Reason)
}
