package election

import (
	"time"

	"scheduler/internal/lease"
)

// Term is one leadership term: from a won campaign until lead returns.
type Term struct {
	// Token is the fencing token: the create revision of the leader key.
	// Every later term of the same election, won by any node, has a
	// strictly higher token (within one etcd history; a restore without
	// --bump-revision breaks this).
	Token int64
	// Node is the name of the node holding the term.
	Node string
	// Since is when the term was won, read from the leader's clock.
	Since time.Time
	// Key is the leader key, Prefix + "/" + the lease ID in hex.
	Key string
	// Lease is the etcd lease the leader key is bound to.
	Lease int64
}

// Reason says why a term ended. Its values are stable and short, fit for
// log fields and metric labels; those of every backend are lease's, and mean
// the same here.
type Reason = lease.Reason

// Reasons a term ends, in no particular order.
const (
	// ReasonCancelled: Run's context was cancelled (shutdown).
	ReasonCancelled = lease.ReasonCancelled
	// ReasonLeadReturned: lead returned nil while Run's context was live.
	ReasonLeadReturned = lease.ReasonLeadReturned
	// ReasonLeadFailed: lead returned an error.
	ReasonLeadFailed = lease.ReasonLeadFailed
	// ReasonRenewalDeadline: no lease renewal succeeded in time; the lease
	// might expire on the server soon, so the term ended before it could.
	ReasonRenewalDeadline = lease.ReasonRenewalDeadline
	// ReasonLeaseGone: a renewal found the lease expired or revoked.
	ReasonLeaseGone = lease.ReasonLeaseGone
	// ReasonSessionDone: the etcd session ended (its keep-alive stopped,
	// the lease was revoked, or the etcd member lost its leader).
	ReasonSessionDone Reason = "session_done"
	// ReasonKeyDeleted: the leader key was deleted, e.g. by an operator.
	ReasonKeyDeleted Reason = "key_deleted"
	// ReasonKeyOverwritten: the leader key was written over with another
	// lease or value, e.g. by `etcdctl put` by hand.
	ReasonKeyOverwritten Reason = "key_overwritten"
	// ReasonWatchFailed: the watch on the leader key failed or closed, e.g.
	// because the etcd member lost its leader.
	ReasonWatchFailed Reason = "watch_failed"
)

// LostError is the cause (context.Cause) of the cancellation of a term's
// context, or of a campaign's, when the campaigner gave leadership up; its
// At is read from Config.Now.
type LostError = lease.LostError
