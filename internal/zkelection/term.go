package zkelection

import (
	"scheduler"
	"scheduler/internal/lease"
)

// Term is one leadership term: from the candidate node becoming the lowest
// until lead returns. It is the scheduler's one Term, which every backend
// hands to the leader.
type Term = scheduler.Term

// LeadFunc is what a leader does during one term (see lease.LeadFunc). The
// campaigner deletes its candidate node only after it has returned.
type LeadFunc = lease.LeadFunc

// Reason says why a term ended, fit for log fields and metric labels (see
// lease.Reason).
type Reason = lease.Reason

// Reasons a term ends.
const (
	// ReasonCancelled: Run's context was cancelled (shutdown).
	ReasonCancelled = lease.ReasonCancelled
	// ReasonLeadReturned: lead returned nil while Run's context was live.
	ReasonLeadReturned = lease.ReasonLeadReturned
	// ReasonLeadFailed: lead returned an error.
	ReasonLeadFailed = lease.ReasonLeadFailed
	// ReasonRenewalDeadline: no request was answered in time; the session
	// might expire on the server soon, so the term ended before it could.
	ReasonRenewalDeadline = lease.ReasonRenewalDeadline
	// ReasonLeaseGone: a check found the candidate node gone.
	ReasonLeaseGone = lease.ReasonLeaseGone
	// ReasonSessionDone: the client lost its connection, or the session
	// expired. A disconnected session may still be alive on the server,
	// but this client can no longer tell for how long.
	ReasonSessionDone Reason = "session_done"
	// ReasonKeyDeleted: the candidate node was deleted, e.g. by an operator.
	ReasonKeyDeleted Reason = "key_deleted"
)

// LostError is the cause (context.Cause) of the cancellation of a term's
// context when the campaigner gave leadership up.
type LostError = lease.LostError
