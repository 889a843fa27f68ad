// Package outcomes writes the outcomes of finished runs to the ledger in batches: Complete
// writes a set of them under a term's token, and a Writer batches the outcomes that runs hand
// over, behind a Sink the runner provides. Kept holds the outcomes a term could not write, for
// a later term of the same process.
//
// A run hands its outcome to a Writer and its goroutine ends; the Writer writes everything
// handed over since its last write in one call, then hands the outcomes over as done. A lone
// outcome is written at once, so batching adds no delay, and no goroutine waits on the ledger
// per run.
//
// # What a Writer guarantees
//
//   - An outcome whose write failed in a way that may succeed later (Retryable: the store did not
//     answer, as opposed to refusing the token or finding the run finished) is written again,
//     with the next batch or after a growing, jittered backoff (Backoff), and is not handed over
//     as done meanwhile: the run it belongs to stays active.
//   - Once Stop is called, a failure already met is final without another try, and an outcome
//     not tried yet is written once: every outcome is handed over as done, written or not.
//   - Every outcome handed to Add is handed to Sink.Done exactly once, on the Writer's goroutine,
//     until Run returns.
package outcomes
