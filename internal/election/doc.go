// Package election turns an etcd cluster into leadership terms for the
// scheduler's replicas: at most one replica believes it leads at a time,
// as far as etcd and the local clock can tell, and every term carries a
// strictly higher fencing token than the terms before it.
//
// A Campaigner runs rounds. Each round grants a fresh lease, campaigns with
// concurrency.Election under the configured prefix with the node name as
// value (so `etcdctl elect --listen PREFIX` shows who leads), confirms the
// win in one transaction, and calls the leader's function with a context
// and a Term. The token is the create revision of the leader key: a later
// term has a newer key, and etcd revisions only grow. The context is
// cancelled the moment leadership is in doubt: the lease could not be
// renewed in time, the etcd session ended, the leader key was deleted, or
// the watch on it failed. When the leader's function returns, the round
// resigns and revokes its lease so that the next candidate takes over at
// once, and a new round starts with a new lease.
//
// # What leadership guarantees, and what it does not
//
// The lease is not a lock. A leader steps down a margin before its lease
// can expire on the etcd server, counting from when its last successful
// renewal was sent; the server cannot have expired the lease earlier, so
// the next leader is elected only after this one's context was cancelled.
// But cancelling a context does not stop a process: a leader paused by GC
// or the operating system, or a write already on the network, can still
// act after its successor has been elected. A clock that runs fast on the
// etcd leader, or slow here, shifts the same window. etcd's own
// documentation says that leases "cannot be used as mutual exclusion
// mechanism by themselves", and Jepsen showed etcd locks losing updates.
//
// The fencing token closes the gap: every durable effect of a term must be
// written through a store that remembers the highest token it has seen
// and rejects writes with a lower one. Then a late write from an old term
// is refused instead of overwriting the work of a newer one. Effects that
// cannot be fenced (e-mail, HTTP calls) may happen twice.
//
// Tokens increase within one etcd history. Restoring etcd from a snapshot
// resets revisions unless it is restored with --bump-revision, after which
// new tokens may be lower than those the store has seen: new leaders are
// then fenced out until the store's fence is reset. A store refusal is
// therefore not proof of a newer leader; Confirm tells the two apart with a
// linearizable read of the leader key, so that a leader whose term etcd
// still confirms need not step down for a fence it cannot have lost to a
// newer term.
//
// # etcd pitfalls handled here
//
//   - Campaign keeps waiting when the session expires: the campaign's
//     context is cancelled when Session.Done fires or the renewal deadline
//     passes.
//   - Campaign can return nil after our key was deleted: the win is
//     confirmed in a transaction on the key's create revision (and on no
//     older key existing) before the leader's function is called.
//   - A failed Campaign or Resign can leave our key behind: every round ends
//     by revoking its lease, which deletes the key.
//   - Session.Done fires between TTL and TTL+1s after the last keep-alive
//     response, after the server may have expired the lease. The lease is
//     renewed with KeepAliveOnce (every TTL/2, sooner for short TTLs and slow
//     links: see renewEvery) and the term ends at (last successful renewal
//     sent + TTL - margin).
//   - The leader key deleted by an operator, or the lease revoked, ends the
//     term through a watch on the key and the session.
//   - A key under the prefix without a lease (written by hand: no replica
//     writes one) is never deleted by an expiry, so every candidate behind
//     it would wait forever. A campaigning round removes the lease-less keys
//     before its own, guarded on the key's lease and mod revision, and logs
//     each at error level; ReadLeader never names one as the leader, and
//     ReadLeaseless and Observer.Leaseless report them.
//   - Election.Observe may lag or report a candidate that does not lead;
//     this package never uses it. ReadLeader and Observer show who holds the
//     election, for people and metrics, never for deciding to lead.
//   - Requests carry WithRequireLeader, so an etcd member without quorum
//     fails them fast instead of leaving them hanging, and NewClient turns
//     on gRPC keep-alive so a dead connection is noticed.
package election
