package zkelection

import "scheduler/internal/lease"

// Reasons a ZooKeeper term ends beside those of every backend (lease.Reason).
const (
	// ReasonSessionDone: the client lost its connection, or the session expired. A
	// disconnected session may still be alive on the server, but this client can no longer tell
	// for how long.
	ReasonSessionDone lease.Reason = "session_done"
	// ReasonKeyDeleted: the candidate node was deleted, e.g. by an operator.
	ReasonKeyDeleted lease.Reason = "key_deleted"
)
