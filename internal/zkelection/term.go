package zkelection

import (
	"context"
	"fmt"
	"time"

	"scheduler"
)

// Term is one leadership term: from the candidate node becoming the lowest
// until lead returns. It is the scheduler's one Term, which every backend
// hands to the leader.
type Term = scheduler.Term

// LeadFunc is what a leader does during one term. ctx is cancelled the
// moment leadership is in doubt, with a *LostError as its cause when the
// campaigner gave leadership up; LeadFunc must stop acting as leader and
// return promptly then. The campaigner deletes its candidate node only after it has
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
	// ReasonRenewalDeadline: no request was answered in time; the session
	// might expire on the server soon, so the term ended before it could.
	ReasonRenewalDeadline Reason = "renewal_deadline"
	// ReasonLeaseGone: a check found the candidate node gone.
	ReasonLeaseGone Reason = "lease_gone"
	// ReasonSessionDone: the client lost its connection, or the session
	// expired. A disconnected session may still be alive on the server,
	// but this client can no longer tell for how long.
	ReasonSessionDone Reason = "session_done"
	// ReasonKeyDeleted: the candidate node was deleted, e.g. by an operator.
	ReasonKeyDeleted Reason = "key_deleted"
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
	return fmt.Sprintf("zkelection: gave up: %s", e.Reason)
}
