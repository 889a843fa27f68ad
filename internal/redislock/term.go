package redislock

import (
	"scheduler"
	"scheduler/internal/lease"
)

// Term is one leadership term: from a taken lock until lead returns. It is
// the scheduler's one Term, which every backend hands to the leader.
type Term = scheduler.Term

// LeadFunc is what a leader does during one term (see lease.LeadFunc). The
// campaigner releases the lock only after it has returned.
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
	// ReasonRenewalDeadline: no renewal succeeded in time; the lease might
	// expire in Redis soon, so the term ended before it could.
	ReasonRenewalDeadline = lease.ReasonRenewalDeadline
	// ReasonLeaseGone: a renewal found the lock expired or taken over.
	ReasonLeaseGone = lease.ReasonLeaseGone
)

// LostError is the cause (context.Cause) of the cancellation of a term's
// context when the campaigner gave leadership up.
type LostError = lease.LostError
