// Package zkelection elects the scheduler's leader with ZooKeeper: every
// candidate creates an ephemeral sequential node under the election's
// parent node, the one created first (the lowest creation zxid, which the
// server assigns, not a name anyone could choose) leads, and each candidate
// watches only the node just before its own, so a leader leaving wakes one candidate, not all.
// At most one replica believes it leads at a time, as far as ZooKeeper and
// the local clock can tell, and every term carries a strictly higher
// fencing token than the terms before it.
//
// The token is the candidate node's czxid, the ID of the transaction that
// created it. Sequence numbers are not: they restart when the parent node
// is deleted and created again, while zxids keep rising through one
// ensemble's history. Restoring an ensemble from an old snapshot, or
// replacing it with a new one, makes czxids start over lower; new leaders
// are then fenced out until the store's fence is reset.
//
// Each round opens its own session, so each term has a fresh node and a
// fresh token. When lead returns, the round closes the session, which
// deletes the node at once, and the next candidate leads without waiting
// for the session timeout (SIGTERM hands over at once).
//
// Anyone the path's access list admits can write under it. A persistent
// node named like a candidate (no replica writes one; no session expiry
// removes it) is never read as the leader, and the replica it stands
// before deletes it, guarded by its version, and logs what it removed. A
// name that is no candidate's is ignored. An access list that refuses the
// replicas (which connect without authentication) stops every campaign, at
// error level, naming the path and the setAcl that restores it. An
// ephemeral node of another client's session cannot be told from a
// replica's: it leads for as long as that session lives.
//
// # What leadership guarantees, and what it does not
//
// The session is not a lock. The server expires a session a timeout after
// it last heard from the client, then deletes its ephemeral node and wakes
// the next candidate. The leader checks its session every timeout/3 and
// steps down a margin before the session could expire, counting on its own
// monotonic clock from when its last answered request was sent, which the
// server heard later. It also steps down at once when the client reports a
// lost connection: the session may still be alive, but nothing tells this
// process for how long. But cancelling a context does not stop a process:
// a leader paused by GC or the operating system can still act after its
// successor was woken. The fence in the store closes the gap: every
// durable effect of a term goes through the store, which refuses a token
// lower than the newest it has seen.
//
// The leader's deadline counts with the session timeout it asked for. A
// server grants between 2 and 20 of its ticks (or its configured bounds);
// a timeout asked above the server's maximum is granted lower, and the
// leader would step down too late, so keep Config.SessionTimeout within
// the server's bounds.
package zkelection
