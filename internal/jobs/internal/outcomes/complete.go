package outcomes

import (
	"context"
	"errors"
	"fmt"

	"scheduler"
)

// Ledger is what Complete needs of the store.
type Ledger interface {
	Complete(ctx context.Context, token int64, c scheduler.Completion) (scheduler.Run, error)
	CompleteMany(ctx context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error)
}

// ErrHeldBack is Complete's answer for the run of a job held back: it is not written while the
// job is held back. A Writer retries such a run quietly, every HeldBackRetry.
var ErrHeldBack = errors.New("the job is held back in this term: its run is recorded once the job runs again")

// Complete finishes runs under token: one alone with Complete, more in batches of MaxBatch
// with CompleteMany. A batch refused by the fence is retried run by run, so that the runs of
// jobs whose fences were not raised yet are still recorded. The errors follow cs; a run the
// ledger did not finish (it was no longer running) has an error wrapping
// scheduler.ErrNotRunning, unless it is finished as c says under token: a write of c whose
// answer was lost had committed, and this is its retry (rewritten).
//
// A job's fence can be held by another session (a job's role holding its advisory lock): a
// write of that job's runs waits for it, up to the store's lock timeout, and every run written
// with them waits too. So the runs of a job heldBack reports are not written (their error wraps
// scheduler.ErrFenceHeld: retried later), and a batch that gave up waiting for one job's fence is
// written again without that job's runs, at once.
func Complete(ctx context.Context, l Ledger, token int64, cs []scheduler.Completion, heldBack func(job string) bool) []error {
	errs := make([]error, len(cs))
	var (
		rest []scheduler.Completion
		at   []int
	)
	for i, c := range cs {
		if heldBack != nil && heldBack(c.Job) {
			errs[i] = &scheduler.HeldError{Job: c.Job, Err: ErrHeldBack}
			continue
		}
		rest, at = append(rest, c), append(at, i)
	}
	for k, err := range complete(ctx, l, token, rest) {
		errs[at[k]] = err
	}
	return errs
}

// complete is Complete for runs of jobs not held back.
func complete(ctx context.Context, l Ledger, token int64, cs []scheduler.Completion) []error {
	errs := make([]error, len(cs))
	if len(cs) == 1 {
		run, err := l.Complete(ctx, token, cs[0])
		if errors.Is(err, scheduler.ErrNotRunning) && rewritten(run, cs[0], token) {
			err = nil
		}
		errs[0] = err
		return errs
	}
	for lo := 0; lo < len(cs); lo += MaxBatch {
		part := cs[lo:min(lo+MaxBatch, len(cs))]
		done, err := l.CompleteMany(ctx, token, part)
		switch {
		case errors.Is(err, scheduler.ErrFenced):
			for i, c := range part {
				errs[lo+i] = complete(ctx, l, token, []scheduler.Completion{c})[0]
			}
		case heldOther(err, part) != "":
			// The other jobs' runs are written again at once, not after a retry that waits
			// again for the held fence.
			job := heldOther(err, part)
			for i, e := range Complete(ctx, l, token, part, func(j string) bool { return j == job }) {
				if errs[lo+i] = e; part[i].Job == job {
					errs[lo+i] = err
				}
			}
		case err == nil && len(done) != len(part):
			err = fmt.Errorf("the ledger answered %d completions for %d runs", len(done), len(part))
			fallthrough
		case err != nil:
			for i := range part {
				errs[lo+i] = err
			}
		default:
			for i := range part {
				if !done[i].Written && !rewritten(done[i].Run, part[i], token) {
					errs[lo+i] = fmt.Errorf("complete run %d of job %q: %w", part[i].RunID, part[i].Job, scheduler.ErrNotRunning)
				}
			}
		}
	}
	return errs
}

// heldOther names the job of a batch's write that gave up waiting for that job's fence (err),
// when the batch has runs of other jobs too; else "".
func heldOther(err error, part []scheduler.Completion) string {
	var he *scheduler.HeldError
	if !errors.As(err, &he) || he.Job == "" {
		return ""
	}
	for _, c := range part {
		if c.Job != he.Job {
			return he.Job
		}
	}
	return ""
}

// rewritten reports whether run, which the ledger did not complete, is finished as c would have
// finished it, under token: an earlier write of c committed though its answer was lost (the
// store went away between its commit and its reply), and only this term writes with token. A
// completion without an attempt count leaves the ledger's, so any attempt matches it.
func rewritten(run scheduler.Run, c scheduler.Completion, token int64) bool {
	return run.RunID == c.RunID && run.Status == c.Status && run.Token == token && (c.Attempt == 0 || run.Attempt == c.Attempt)
}
