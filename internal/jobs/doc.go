// Package jobs is the runner: while its replica leads, it fires the cron table's slots, runs each
// job's executor once per slot and records every slot's outcome in the run ledger. The slots come
// from package schedule; the ledger and the executors are the scheduler package's Ledger and
// Executor, which the store and the job kinds provide.
//
// # What the runner guarantees
//
//   - One effect in the store per slot. A run is keyed by (job, slot) in the ledger and is
//     claimed there, under the term's token, before its executor starts; a second claim of the
//     slot, by this term or any other, finds the first's run instead of making one. A slot
//     claimed ahead of its fire time is not started (attempt 0) until it fires.
//   - Every write is fenced in the store. The runner's claims, records and outcomes, and each
//     job's own writes through Attempt.Fencer, carry the term's token, and the store refuses a
//     token older than the newest it has seen in the same transaction. A refused write
//     (scheduler.ErrFenced) is never retried with that token: the term ends, unless etcd still
//     confirms it (Options.Confirm); then only the refused job is blocked, and runs again by
//     itself once its fence is reset. A fence held by an older open transaction
//     (scheduler.ErrFenceHeld) holds back that job alone.
//   - A new leader raises every job's fence to its token before anything else, so no write of
//     an older term commits after it. It then takes over the runs older leaders left running
//     (running them again, or closing them when their slot no longer runs) and catches up on
//     the slots of each job's catch-up window that no leader ran, by its misfire policy: skip
//     records them missed, once runs the latest, all runs them in order.
//   - An outcome is not lost to a store outage while the term lasts: its write is retried, and
//     the run stays active for its job's overlap policy and for a drain.
//
// When the term ends (its context is cancelled), the runner stops firing, cancels every run and
// waits for them and for the claims in flight before Lead returns. Runs cut off and slots
// claimed ahead stay running in the ledger under the old token, for the next leader to take
// over. Outcomes whose executors returned but whose writes did not land are kept in memory, so
// that if this process leads again it writes them instead of running their slots again.
//
// # What it does not guarantee
//
// Effects outside the store are not fenced: a run cut off by the end of its term, or whose
// outcome was not written, is run again by the next leader, so for them the guarantee is at
// least once. Attempt.RunID, stable across the attempts of a slot, is the idempotency key for
// such effects. Slots are fired on the leader's clock; a leader that is down longer than a
// job's catch-up window records the older slots missed rather than running them.
//
// # Where a slot's life is
//
// A slot waits in the claim queue (queue.go), is claimed (claim.go), fires (fire.go), runs its
// attempts (run.go, attempt.go, started.go) and has its outcome written (outcome.go,
// completer.go); a reload re-times it (reload.go). A new tenure takes over (takeover.go) and
// catches up (catchup.go); a job whose fence refuses the tenure is blocked (blocked.go); writes
// that wait for the store form a backlog (backlog.go). The pieces that stand alone are packages
// of the runner's own, under internal/: slotqueue (the fire heap and the claim plan), attempts
// (a run's attempts), outcomes (batched outcome writes), catchup (what a new leader owes a job's
// past slots), overlap (a slot due while a run is in its way), refusal and holds (refused and
// held fences), notices, parallel (writes side by side), runopts (the runner's settings),
// jobspec (a job as the runner reads it), bounded, runkey, backoff and clock.
package jobs
