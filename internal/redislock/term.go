package redislock

import (
	"context"
	"fmt"
	"time"
)

// Term is one leadership term: from a taken lock until lead returns. Its
// fields are those of the etcd backend's term that the runner reads.
type Term struct {
	// Token is the fencing token: taken from the counter in the script that
	// took the lock, above the counter's last value and the floor (the
	// store's highest fence) read before the attempt.
	Token int64
	// Node is the name of the node holding the term.
	Node string
	// Since is when the term was won, read from the leader's clock.
	Since time.Time
}

// LeadFunc is what a leader does during one term. ctx is cancelled the
// moment leadership is in doubt, with a *LostError as its cause when the
// campaigner gave leadership up; LeadFunc must stop acting as leader and
// return promptly then. The campaigner releases the lock only after it has
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
	// expire in Redis soon, so the term ended before it could.
	ReasonRenewalDeadline Reason = "renewal_deadline"
	// ReasonLeaseGone: a renewal found the lock expired or taken over.
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
	return fmt.Sprintf("redislock: gave up: %s", e.Reason)
}
