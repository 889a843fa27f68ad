// Package scheduler holds the words every other package of the scheduler shares: a job's slot
// (SlotKey), its run in the ledger (Run, Status), what a write of the ledger reports (Result) and
// takes (Completion, Outcome, RunRef), one attempt of a job as its kind receives it (Attempt,
// Executor), the fenced transaction a kind writes through (Fencer, Tx), the store's refusals
// (ErrFenced, FenceError, ErrFenceHeld, ErrNotRunning) and the ledger the runner needs of the
// store (Ledger).
//
// It imports nothing of the scheduler's own, so the store, the runner and the job kinds all use
// these types directly and none of them translates another's.
//
// # Guarantees carried by these types
//
// Every write of the ledger and every fenced transaction carries the fencing token of the
// leadership term that makes it: the create revision of its etcd leader key, higher for every
// new term. The store refuses, in the same transaction that would persist the write, a token
// older than the newest it has seen for the job; the refusal is an error for which
// errors.Is(err, ErrFenced) holds, and for the store's own refusals a *FenceError naming the job,
// the token and the fence. Nothing a refused transaction wrote commits. So a leader that lost
// its term, however late its writes arrive, cannot change a slot's run once a newer term has
// written for that job.
//
// A slot has at most one run: the ledger keys runs by SlotKey, so a slot claimed twice reports
// the existing run (Result.Written false) instead of creating a second one. The effects a job
// has outside the store are not fenced: a job kind that writes elsewhere gets at-least-once,
// and Attempt.RunID is the idempotency key for such effects.
package scheduler
