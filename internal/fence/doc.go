// Package fence is the scheduler's store: the fence that orders the writes
// of successive leaders, the run ledger, and the outbox of the runs'
// messages, on Postgres (pgx) or on an embedded SQLite file. One *Store
// serves both; Dialect and ParallelWriters say which one it is.
//
// This package holds the Store: it validates input, retries serialization
// failures, wraps errors and states the guarantees below. Each backend is a
// private package beside it that makes one attempt per call: postgres (the
// fence of advisory locks and gates, the ledger's batches, the outbox, sql
// jobs' statements, on pgx) and sqlite (the single writer). They share
// tables (the columns of a run and of a message, their scanners, and the
// statements written once for both dialects) and verdict (the refusals, the
// values this package exports as ErrStale, ErrRaiseTimeout and the others).
// None of them imports this package.
//
// # The fence
//
// Every leader term has a fencing token: the create revision of its etcd
// leader key, higher for every new term. The store keeps one row per job
// (job_fence) holding the newest token seen. A result-writing transaction
// enters the job's fence with its token before it writes:
//
//   - an equal token proceeds, and writers with the same token do not wait
//     for each other;
//   - a newer token raises the fence, and the raise waits for every
//     in-flight transaction that entered with an older token, so that no
//     write with an older token can commit after the raise has committed;
//   - an older token is refused: ErrStale in Go, SQLSTATE JF001
//     (StaleErrorCode) in SQL.
//
// A refused token means another leader owns the job: drop the result, stop
// scheduling and leave the election. The fence orders writes; it does not
// deduplicate them, which is what the ledger's unique slot is for.
//
// # Why the order holds on Postgres under READ COMMITTED
//
// Each job has a transaction-level advisory lock, key
// hashtextextended('<schema>.job_fence:' || job, 0). A writer takes it
// shared, then reads the fence in a separate, later statement, and proceeds
// only if the fence equals its token. A raiser takes it exclusive, then
// updates the fence row; both hold the lock until their transaction ends.
// Consider a writer W with token t and a raiser R with token u > t:
//
//   - W holds the shared lock first: R's exclusive request waits until W
//     has ended, so W's writes are committed (or rolled back) before R
//     raises.
//   - R holds the exclusive lock first: W waits until R has ended. Postgres
//     releases a transaction's locks only after its commit is visible to new
//     snapshots (ProcArrayEndTransaction precedes the release of locks), and
//     under READ COMMITTED every statement takes a new snapshot, so W's read,
//     a statement after its lock statement, sees u and W is refused.
//   - R committed before W's lock statement: W's read sees u as well.
//
// So no t-write commits after a u-raise. Writers share the lock and write
// nothing to the fence row, so same-token writers neither serialize nor
// create tuple locks (multixacts). The lock manager queues a new shared
// request behind a waiting exclusive one, so a stream of old writers cannot
// starve a raise.
//
// A batch of the ledger enters the fences of all its jobs with
// fence_check_all. When every fence already equals the token, as after the
// leader's RaiseAll, it takes the shared locks of all the jobs in one
// statement and reads their fences in a later one: each job's read still
// follows the grant of its own lock, in a snapshot taken after it, so the
// argument holds job by job. The locks are taken in the byte order of the
// job names, the order in which fence_raise takes its exclusive ones, so a
// batch and a raise cannot deadlock. Any other case (a fence below the
// token, which the batch then raises, or an isolation level above READ
// COMMITTED) takes one fence_check per job.
//
// The argument rests on three details that tests keep by running the
// ordering checks against broken variants, which must fail: the fence is a
// lock, not a row lock FOR KEY SHARE (an UPDATE of a non-key column does not
// conflict with it, so the raise would not wait); the fence functions are
// VOLATILE, not STABLE (a STABLE function reads with the calling statement's
// snapshot, taken before the lock wait); and the lock and the read are two
// statements, not one, for the same reason.
//
// Fenced sends BEGIN, the lock, the fence read and fn's first statement in
// one batch, so the fence costs no round trip of its own. The read is a
// gate that fails with division_by_zero unless the fence equals the token,
// so the server aborts before fn's statement runs. fn is therefore called
// before the verdict, and should do nothing outside the transaction before
// its first statement.
//
// # SQL interface for scripts
//
// Exec jobs that write to Postgres themselves fence their transaction with
// <schema>.fence_verify(job text, token bigint) as its first statement:
//
//	psql -X -v ON_ERROR_STOP=1 --single-transaction -v tok="$SCHEDULER_FENCE_TOKEN" -f job.sql
//	-- job.sql:  SELECT scheduler.fence_verify('nightly', :'tok'::bigint);  then the writes
//
// fence_verify only checks: when the token equals the job's fence it takes
// the job's shared lock until the transaction ends, as a writer of the
// scheduler does; any other token, and a job without a fence, raises
// JF001, so psql writes nothing and fails. It never raises a fence and
// never creates a row: the leader raised the fences of its jobs when it
// took over. It raises 22023 for a token <= 0, and 40001 under REPEATABLE
// READ or SERIALIZABLE when a raise committed after the transaction's
// snapshot (retry). It is VOLATILE and SECURITY DEFINER with a fixed
// search_path, so a job role needs only:
//
//	GRANT USAGE ON SCHEMA scheduler TO job_role;
//	GRANT EXECUTE ON FUNCTION scheduler.fence_verify(text, bigint) TO job_role;
//
// The functions that raise (fence_check, fence_check_all, fence_raise) and
// the table belong to the scheduler's own role and are revoked from every
// other grantee: a role that may raise a fence to a token no leader will
// hold can stop the job for good. fence_admin_reset(job) removes a fence
// with the caller's rights and is for operators only (see
// ErrTokenRegressed).
//
// # A frozen old leader must not block the new one for ever
//
// A raise waits for the transactions that hold the job's lock, and a
// leader's process may freeze inside one (GC pause, SIGSTOP, a host stall).
// Therefore every raise runs under lock_timeout (Config.RaiseTimeout) and
// then fails with ErrRaiseTimeout; the store sets
// idle_in_transaction_session_timeout (Config.IdleInTransactionTimeout) on
// its own sessions, so the server ends a frozen leader's idle transaction
// and frees its lock. Set it, with statement_timeout, for job roles too,
// and set the server's tcp_keepalives_* so that a dead client host's
// session does not hold its locks until the operating system's TCP
// timeout.
//
// # Taking over
//
// A new leader calls RaiseAll with every job before it runs anything: once
// it returns, no write of an earlier term can commit, and Orphans lists the
// runs those terms left running, for Reclaim or Complete. A stored fence
// above the new token means etcd's revisions went backwards, and RaiseAll
// refuses with an error that says how to repair etcd. A raise that gives up
// (ErrRaiseTimeout) does not say which fence it waited for: HeldFences reads
// the server's lock table for the jobs whose fences other sessions hold, so
// that the leader holds those back and raises the others without waiting
// again.
//
// # SQLite
//
// The embedded store has one writer at a time: every write transaction is
// BEGIN IMMEDIATE on a single connection (busy_timeout for other
// processes), and the fence is read, compared and raised in Go inside it.
// Nothing can write between the check and the commit, which makes the fence
// trivially correct, and ParallelWriters reports false. The same
// conformance suite runs against both backends.
//
// # The run ledger
//
// One row per (job, slot, manual) with the run's token, node, attempt,
// status, times, and excerpts of its error, output and reason (MaxExcerpt).
// Every write is a fenced transaction of one round trip that takes many
// slots or runs at once and reads back each run's key, not every column. A
// run left running under a token other than its job's fence is an orphan.
//
// # The outbox
//
// The outbox holds the e-mails and webhooks of the jobs' runs. A message is
// written only inside a fenced transaction of its job, with that
// transaction's token: Enqueue, with the Tx of a Fenced call, or, for
// scripts and job roles,
//
//	SELECT scheduler.outbox_enqueue(job, token, key, kind, destination, subject, body, scheduled_at, manual)
//
// after their fence_verify. Both check the fence again, so a message of a
// fenced-out transaction never exists, and insert with ON CONFLICT (key) DO
// NOTHING, so a redo of the slot queues nothing twice. Every fence of a term
// holds the same token, so for a role's call outbox_enqueue also wants the
// secret of a running run of the job named (Store.RunSecret, in the setting
// scheduler.run_secret), queues the message for that run's slot, and takes
// only keys that begin with the job's name and a dot: one job's role can
// neither queue as another job nor take another job's key first.
// outbox_enqueue is SECURITY DEFINER; a job role needs EXECUTE on it and
// nothing on the table:
//
//	GRANT EXECUTE ON FUNCTION scheduler.outbox_enqueue(text, bigint, text, text, text, text, text, timestamptz, boolean) TO job_role;
//
// The dispatcher's claims and records are fenced by OutboxFence, its own
// fence, rather than by the jobs' fences: a job removed from the table
// keeps an old fence that no new leader raises, and its messages must still
// go out. The first claim of a new term raises OutboxFence, waiting for the
// older term's claims and records in flight, and hands the messages older
// terms left sending back to pending in the same transaction. A term hands
// back its own claimed messages, never sent, with ReleaseOutbox (all of
// them) and DeferOutbox (those named, due later), fenced alike.
package fence
