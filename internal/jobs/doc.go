// Package jobs is the runner: while its replica leads, it fires the cron table's slots, runs each
// job's executor once per slot and records every slot's outcome in the run ledger, fenced with
// the term's token. The slots come from package schedule; the ledger and the executors are the
// scheduler package's Ledger and Executor, which the store and the job kinds provide.
//
// # What the runner promises
//
//   - One run per slot. A slot is claimed in the ledger before its executor starts, and the
//     ledger keeps one run per slot, so two terms (or two replicas) that both reach a slot run it
//     once between them: the second finds the first's run. A slot claimed ahead of its fire time
//     is not started (attempt 0) until it fires, so that a takeover before then counts attempt 1.
//   - Fencing. Every write, the runner's own and each job's through Attempt.Fenced, carries the
//     term's token. A write the store refuses (scheduler.ErrFenced) is never retried: the term
//     ends, unless etcd still confirms it (Options.Confirm), in which case only the job whose
//     fence refused is blocked, and runs again by itself once its fence is reset. A raise that
//     waits on an older writer (scheduler.ErrFenceHeld) holds back that job alone.
//   - An outcome is not lost to a store outage. The write of a finished run's outcome is retried
//     for as long as the term lasts; until it lands the run stays active, for its job's overlap
//     policy and for a drain. An outcome given up when the term ends is kept, so that if this
//     process leads again it writes it instead of running the slot again.
//   - Catch-up. A new term raises every fence first, so that no write of an older term can
//     commit after it; it then reads the ledger's window of the catch-up period and records the
//     slots no leader ran (missed, or run once under misfire "once"), takes over the runs older
//     leaders left running, and runs them again when their job's policy says so.
//
// # What it does not promise
//
// Effects a job has outside the store are not fenced: a run cut off by the end of its term is
// run again by the next leader, so for them the guarantee is at least once. Attempt.RunID, stable
// across the attempts of a slot, is the idempotency key for such effects.
//
// # Where a slot's life is
//
// The claim queue and claims ahead (preclaim.go, started.go), the fire heap and the firing loop
// (heap.go, fire.go, term.go), an attempt and its retries (attempt.go, cancel.go), its outcome
// (completer.go, outcome.go), a term's takeover and catch-up (takeover.go, catchup.go), and jobs
// blocked or held by their fence (blocked.go, held.go).
package jobs
