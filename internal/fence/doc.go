// Package fence is the scheduler's store: the fence that orders the writes
// of successive leaders, and the run ledger, on Postgres (pgx) or on an
// embedded SQLite file. One *Store serves both; Dialect and ParallelWriters
// say which one it is.
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
//   - an older token is refused: ErrStale in Go (a *scheduler.FenceError with the
//     job, the token and the fence), SQLSTATE JF001 (StaleErrorCode) in SQL.
//
// A refused token means another leader owns the job: drop the result, stop
// scheduling and leave the election. The fence orders writes; it does not
// deduplicate them, which is what the ledger's unique slot is for.
//
// # Postgres: advisory locks, and why the order holds under READ COMMITTED
//
// Each job has a transaction-level advisory lock, key
// hashtextextended('<schema>.job_fence:' || job, 0). A writer takes it
// shared, then reads the fence in a separate, later statement, and proceeds
// only if the fence equals its token. A raiser takes it exclusive, then
// updates the fence row; both hold the lock until their transaction ends.
// Consider a writer W with token t and a raiser R with token u > t:
//
//   - W holds the shared lock first: R's exclusive request waits until W
//     has ended. W's writes are committed (or rolled back) before R raises.
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
// A batch of the ledger (ClaimMany, RecordMany, ReclaimMany, CompleteMany)
// enters the fences of all its jobs with fence_check_all. When every fence
// already equals the token, as after the leader's RaiseAll, it takes the
// shared locks of all the jobs in one statement and reads all their fences
// in a later one: each job's read still follows the grant of its own lock,
// in a snapshot taken after it, so the argument above holds job by job.
// The locks are taken in the byte order of the job names, the order in
// which fence_raise (and so RaiseAll) takes its exclusive ones, so a batch
// and a raise cannot deadlock. Any other case (a fence below the token,
// which the batch then raises, or an isolation level above READ COMMITTED)
// takes one fence_check per job. Three statements for a batch of 1,000
// jobs cost about 2 ms of server time where 1,000 calls cost about 15 ms.
//
// Three ways to get this wrong are kept out by tests that run the ordering
// checks against broken variants and expect them to fail: row locks with
// FOR KEY SHARE instead of FOR SHARE (an UPDATE of a non-key column does not
// conflict with it, so the raise does not wait); a STABLE fence function
// (its reads use the calling statement's snapshot, taken before the lock
// wait, so a writer that waited behind a raise reads the old fence); and,
// the same mistake, the lock and the read in one statement.
//
// Fenced costs no extra round trip: BEGIN, the lock, the fence read (a
// "gate" that fails with division_by_zero unless the fence equals the token,
// so the server aborts before anything else runs) and fn's first statement
// travel in one batch, so a fenced one-statement transaction takes two round
// trips where pgx.BeginTxFunc takes three. fn is therefore called before the
// fence is checked: if the fence refuses, fn's first statement and every
// later one fail with the stale error and nothing commits. fn should do
// nothing outside the transaction before its first statement. A fence below
// the token is raised in a short transaction of its own (as RaiseAll does)
// and fn runs again.
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
// SQLSTATE JF001 ("fenced out: ..."), so psql writes nothing and exits with
// status 3. It never raises a fence and never creates a row: the leader
// raised the fences of its jobs when it took over (RaiseAll). Other errors:
// 22023 for a token <= 0, and 40001 under REPEATABLE READ or SERIALIZABLE
// when a raise committed after the transaction's snapshot (the fence row is
// locked FOR SHARE there; retry). It is VOLATILE and SECURITY DEFINER with
// a fixed search_path, so a job role needs only:
//
//	GRANT USAGE ON SCHEMA scheduler TO job_role;
//	GRANT EXECUTE ON FUNCTION scheduler.fence_verify(text, bigint) TO job_role;
//
// The functions that raise (fence_check, fence_check_all, fence_raise) and
// the table are for the scheduler's own role, their owner: a role that may
// call them could raise a fence to a token no leader will hold and so stop
// the job for good. Migration 5 revokes them from every other grantee.
// fence_check raises a documented JF001 for an older token too, and takes
// the exclusive lock to raise a newer one. fence_admin_reset(job) removes a
// fence; it runs with the caller's rights (the table's owner) and is for
// operators only (see ErrTokenRegressed).
//
// Store.FencedStatements runs the text of a sql job: on Config.JobDSN when
// it is set, entering the fence with fence_verify as that connection's
// role, else on the store's own connection; either way under an optional
// role (SET LOCAL ROLE) and checked again right before the commit.
//
// # Timeouts: a frozen old leader must not block the new one for ever
//
// A raise waits for the transactions that hold the job's lock. If the old
// leader's process freezes inside one (GC pause, SIGSTOP, a host stall),
// the raise would wait as long as that transaction lives. Therefore:
//
//   - every raise runs under lock_timeout: Config.RaiseTimeout (10s) for
//     RaiseAll and Fenced; 10s in fence_check unless the session set its own.
//     It then fails with ErrRaiseTimeout (55P03): retry with backoff;
//   - the store sets idle_in_transaction_session_timeout (Config.
//     IdleInTransactionTimeout, 60s) on its own sessions unless the DSN sets
//     it, so the server ends a frozen leader's idle transaction and frees its
//     lock; set it for job roles too (ALTER ROLE job_role SET
//     idle_in_transaction_session_timeout = '30s'), with statement_timeout
//     for statements that hang while active;
//   - set the server's tcp_keepalives_idle/interval/count, so that a dead
//     client host's session (and its locks) does not linger for the
//     operating system's two-hour TCP timeout.
//
// # Taking over
//
// A new leader calls RaiseAll with every job before it runs anything: once
// it returns, no write of an earlier term can commit, and Orphans lists the
// runs those terms left running (Reclaim or ReclaimMany takes them over,
// Complete or CompleteMany closes them). Window reads the ledger's recent
// runs of every job in one query, for catch-up. If a stored fence is above the new token, RaiseAll refuses with a
// regression error: etcd's revisions went backwards (restored from an old
// snapshot without --bump-revision, or a new cluster), and its message says
// how to repair etcd (etcdutl snapshot restore --bump-revision ...
// --mark-compacted).
//
// # SQLite
//
// The embedded store has one writer at a time: every write transaction is
// BEGIN IMMEDIATE on a single connection (busy_timeout for other processes),
// and the fence is read, compared and raised in Go inside it. Nothing can
// write between the check and the commit, which makes the fence trivially
// correct, and ParallelWriters reports false. The same conformance suite
// runs against both backends.
//
// # The run ledger
//
// One row per (job, slot, manual): token, node, attempt, status (running,
// succeeded, failed, skipped, missed, fenced), start and finish times, error,
// a bounded output excerpt (MaxExcerpt characters) and a reason. Claims,
// records and completions are fenced writes of one round trip each, and
// take many slots or runs at once (ClaimMany, RecordMany, ReclaimMany,
// CompleteMany; ReclaimMany in transactions of up to 1,000 slots). The
// batches read back each run's key (run id, slot, status, token, attempt),
// not every column. A run left running under a token other than its job's
// fence is an orphan. A ClaimMany made ahead of its slot records the slot's
// time as the run's start; ClaimAheadMany records no start and attempt 0,
// until StartMany marks the run started, so that attempt counts only the
// attempts that started (a takeover adds one to it). History and Last (the status command) read the
// slot's unique index; Window (catch-up) reads the runs of many jobs in one
// query.
//
// # The outbox
//
// The outbox table (migration 7) holds the e-mails and webhooks of the
// jobs' runs. A message is written only inside a fenced transaction of its
// job, with the token of that transaction: Enqueue, with the Tx of a Fenced
// call (builtins), or, for scripts and job roles,
//
//	SELECT scheduler.outbox_enqueue(job, token, key, kind, destination, subject, body, scheduled_at, manual)
//
// after their fence_verify. Both check the fence again themselves, so a
// message of a fenced-out transaction never exists, and insert with ON
// CONFLICT (key) DO NOTHING, so a redo of the slot queues nothing twice.
// outbox_enqueue is SECURITY DEFINER with a fixed search_path; migration 7
// grants EXECUTE on it to every grantee of fence_verify, and a newer job
// role needs
//
//	GRANT EXECUTE ON FUNCTION scheduler.outbox_enqueue(text, bigint, text, text, text, text, text, timestamptz, boolean) TO job_role;
//
// and nothing on the table, which job roles cannot read or write. Its
// times are the server's clock. SQLite has no such function and no roles.
//
// The leader's dispatcher delivers the messages (package outbox).
// ClaimOutbox and RecordDelivery are fenced by OutboxFence, the
// dispatcher's own fence, rather than by the jobs' fences: a job removed
// from the table keeps an old fence that no new leader raises, and its
// messages must still go out. The first claim of a new term raises
// OutboxFence (waiting for the older term's claims and records in flight)
// and hands the messages older terms left sending back to pending in the
// same transaction; afterwards an older token claims and records nothing.
// Every claim counts an attempt before anything is sent. Prune deletes a
// job's delivered messages once their run is deleted. RetryOutbox, an
// operator's tool, revives a dead message.
//
// # Migrations
//
// Migrate applies the embedded goose migrations (package migrations) into
// Config.Schema, with goose's version table in that schema too. Concurrent
// migrations of one database queue on an advisory lock; a store already up
// to date is a success. CheckSchema, for `scheduler run`, fails with
// ErrSchemaBehind when a migration is missing.
package fence
