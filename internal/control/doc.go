// Package control keeps the scheduler's cluster-wide operations state in
// etcd, beside the election it shares a prefix with: which jobs are paused,
// which manual runs and backfills have been requested, and which replicas are alive (and
// what job table each one runs). Who leads, and since when, is the election
// package's business (PREFIX.term).
//
// Every mutation is an etcd write, so it is subject to etcd's
// authentication and survives any replica; nothing here listens on the
// network.
//
// # Key layout
//
// The election owns every key under PREFIX + "/" (concurrency.Election
// appends "/" to its prefix and treats each key below it as a candidate), so
// nothing else may live there. The keys of this package sit beside it,
// joined with a colon:
//
//	PREFIX:paused/JOB                 {"by": "...", "at": RFC3339}; no lease
//	PREFIX:trigger/JOB/TIME           {"by": "..."}; no lease; TIME is the request
//	                                  time in UTC, 2006-01-02T15:04:05.000000Z
//	PREFIX:replica/NODE               Replica as JSON; bound to the replica's lease
//	PREFIX:backfill/JOB/ID            Backfill as JSON; no lease; ID is the request's id,
//	                                  zero-padded to a fixed width
//	PREFIX:store                      StoreRecord as JSON; no lease; the deployment's store,
//	                                  written once by the first leader (ClaimStore)
//
// A job is paused while its key exists, whatever the value says, so an
// operator can also pause with `etcdctl put PREFIX:paused/JOB ""`. A pause
// stops scheduled slots only: a manual trigger is an explicit request and
// runs a paused job all the same.
//
// # Keys written by hand
//
// Anyone with write access to the prefix can write these keys by hand, so
// none is trusted to be as this package writes it. A key that is not is
// refused where it is read, never handed on: the Watcher logs a trigger key
// at a time Trigger would refuse, or a pause key that names no job, once at
// warn with the etcdctl del that removes it; Registry reports a registry
// entry bound to no lease (it would never expire) or that is no replica's;
// Backfills returns a request that does not parse with Unreadable set, and
// UpdateBackfill writes a request's progress under the key it was read from.
//
// # Manual runs are exactly-once through the ledger
//
// A trigger request names its job and a time with microsecond precision,
// the precision of the run ledger. The leader runs it as the manual slot at
// that time and deletes the request afterwards. The ledger keeps one run
// per (job, manual slot), so a leader that dies between running a request
// and deleting it leaves a request that its successor finds already
// recorded: the run happens once, and the request is merely delivered
// twice. This package delivers requests at least once and relies on that.
package control
