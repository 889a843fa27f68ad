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

// Complete finishes runs under token: one alone with Complete, more in batches of MaxBatch
// with CompleteMany. A batch refused by the fence is retried run by run, so that the runs of
// jobs whose fences were not raised yet are still recorded. The errors follow cs; a run the
// ledger did not finish (it was no longer running) has an error wrapping
// scheduler.ErrNotRunning.
func Complete(ctx context.Context, l Ledger, token int64, cs []scheduler.Completion) []error {
	errs := make([]error, len(cs))
	if len(cs) == 1 {
		_, errs[0] = l.Complete(ctx, token, cs[0])
		return errs
	}
	for lo := 0; lo < len(cs); lo += MaxBatch {
		part := cs[lo:min(lo+MaxBatch, len(cs))]
		done, err := l.CompleteMany(ctx, token, part)
		switch {
		case errors.Is(err, scheduler.ErrFenced):
			for i, c := range part {
				_, errs[lo+i] = l.Complete(ctx, token, c)
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
				if !done[i].Written {
					errs[lo+i] = fmt.Errorf("complete run %d of job %q: %w", part[i].RunID, part[i].Job, scheduler.ErrNotRunning)
				}
			}
		}
	}
	return errs
}
