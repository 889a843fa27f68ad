// Package attempts runs one claimed slot of a job to its end: its attempts, each bounded by the
// job's timeout on the runner's clock, a backoff and a retry after each failed attempt while
// the job has retries left, each retry recorded in the ledger under the term's token, and the
// run's cancellation with a cause (Cancel).
//
// # What Run guarantees
//
//   - Every attempt gets the term's token, a run id stable across the attempts of its slot, and
//     the store to write through (scheduler.Attempt.Fencer), so that its writes are fenced.
//   - A run cancelled for a cause other than ErrReplaced (the term ended, the shutdown grace
//     expired) has no outcome: it stays running in the ledger, for the next leader to take
//     over. A run replaced by a newer slot fails, saying so.
//   - A run made final (Cancel.Final: its job left the table) finishes the attempt under way
//     and starts no other: it fails with that attempt's error, saying it was not retried.
//   - A refusal by the fence, of an attempt's write or of the record of a retry, is never
//     retried with the same token: Run returns it (Result.Fenced) for the runner to settle.
//   - Attempt numbers never count down: a retry made while the store was unreachable was not
//     recorded there, but it was made.
package attempts
