// Package pglease elects the scheduler's leader with Postgres alone: a
// lease row in the store's own database, no etcd. At most one replica
// believes it leads at a time, as far as the database's clock and the local
// clock can tell, and every term carries a strictly higher fencing token
// than the terms before it and than every fence the store holds.
//
// A Campaigner takes the row of its election in leader_lease when it is
// free or expired, renews it every TTL/3 while lead runs, and releases it
// when lead returns. Every expiry is computed from and compared with the
// database's clock_timestamp() inside the statement, so replicas' clocks
// never judge a lease. The statement that grants the lease also raises its
// token to one more than the larger of the row's last token and the
// highest token in job_fence: a new term's token is never refused by a
// fence that an older term, or an earlier coordinator, left behind, and it
// cannot go backwards as long as the row lives in the same database as the
// fence.
//
// # What leadership guarantees, and what it does not
//
// The lease is not a lock. The leader steps down a margin before its lease
// could expire in the database, counting on its own monotonic clock from
// when its last successful renewal was sent; the database counts the TTL
// from when it ran the statement, which is later, so the next term is
// granted only after this one's context was cancelled. But cancelling a
// context does not stop a process: a leader paused by GC or the operating
// system, or a write already on the network, can still act after its
// successor has been granted the lease. The fence in the store closes the
// gap: the successor's token is higher, so the late write is refused. A
// step of the database server's clock shifts every expiry with it, which
// the fence covers the same way.
//
// A session advisory lock alone would be worse: a frozen leader's
// connection stays open and keeps the lock for as long as the process is
// frozen, so nobody takes over. A lease row expires on the database's
// clock whatever the holder's connection does; a frozen leader is replaced
// within about the TTL.
//
// # How followers learn of changes
//
// Grants and releases are announced with NOTIFY on a channel per schema,
// and followers LISTEN on one connection each, so a resigning leader
// (SIGTERM) is replaced at once. A frozen or crashed leader announces
// nothing; followers therefore also try again when the lease they saw would
// expire by the database's clock, and at the latest every Config.Poll.
// NOTIFY alone would miss a crash; polling alone would either be slow or
// hammer the database. A lost notification costs at most one poll, and a
// forged one (any role may NOTIFY) only an extra attempt: the database
// decides every grant.
//
// The lease table is revoked from PUBLIC like the fence: a job's database
// role, which may call fence_verify, cannot read or write the lease. What
// the scheduler's own role writes by hand is judged by the same rules: a
// row without a holder or a node is free whatever its expiry (every grant
// names both, every release clears them); a token set back still yields one above
// every fence; a token at the largest bigint stops every campaign, at error
// level, naming the UPDATE that sets it back. A row naming a holder with an
// expiry far ahead cannot be told from a term's and is waited for.
//
// Failover of the database itself is outside this package: a standby
// promoted without the last commits can hand out a token again that the
// old primary already granted. The fence lives in the same database and
// goes back with it.
package pglease
