package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"scheduler"

	"scheduler/internal/jobs/internal/outcomes"
)

// maxCompleteBatch bounds the runs finished by one CompleteMany.
const maxCompleteBatch = outcomes.MaxBatch

// finished is a run whose outcome is to be written; the completer queues pointers to it. It is
// kept small: a herd's runs may all wait in the completer at once.
type finished struct {
	c       scheduler.Completion
	slot    time.Time
	attempt int
	took    time.Duration
	done    runDone
	err     error // the write's answer, set by finish
}

// completer is where the tenure's completer (outcomes.Writer) writes the outcomes of finished
// runs, and reports them done to the loop. It runs on the completer's goroutine.
type completer struct{ t *tenure }

// Ready lets a herd's starts go first: its first runs end while later ones are still starting,
// and their outcomes wait for the starts.
func (c completer) Ready() { c.t.yieldToStarts() }

// Write writes the outcomes of fs, each write bounded by Options.WriteTimeout.
func (c completer) Write(fs []*finished) []error {
	cs := make([]scheduler.Completion, len(fs))
	for i, f := range fs {
		cs[i] = f.c
	}
	ctx, cancel := c.t.writeCtx(c.t.runsCtx)
	defer cancel()
	return c.t.completeAll(ctx, cs)
}

// Done settles the writes of fs and tells the loop that their runs are done.
func (c completer) Done(fs []*finished, errs []error) {
	ds := make([]runDone, len(fs))
	for i, f := range fs {
		c.t.finish(f, errs[i])
		ds[i] = f.done
		ds[i].out = f
	}
	c.t.doneMany <- ds
}

// Retrying logs a failed write of outcomes that is tried again (outcomeFailed).
func (c completer) Retrying(f *finished, runs, failures int, wait time.Duration, err error) {
	c.t.outcomeFailed(f, runs, failures, wait, err)
}

// completeAll finishes runs: one alone with Complete, more in batches of CompleteMany.
// A batch refused by the fence is retried run by run, so that the runs of jobs whose fences were
// not raised yet are still recorded. The errors follow cs. Like recordAll it reads only t.token
// and t.r.opts, so the completer and a takeover call it off the loop.
func (t *tenure) completeAll(ctx context.Context, cs []scheduler.Completion) []error {
	errs := make([]error, len(cs))
	if len(cs) == 1 {
		_, errs[0] = t.r.opts.Ledger.Complete(ctx, t.token, cs[0])
		return errs
	}
	for lo := 0; lo < len(cs); lo += maxCompleteBatch {
		part := cs[lo:min(lo+maxCompleteBatch, len(cs))]
		done, err := t.r.opts.Ledger.CompleteMany(ctx, t.token, part)
		switch {
		case errors.Is(err, scheduler.ErrFenced):
			for i, c := range part {
				_, errs[lo+i] = t.r.opts.Ledger.Complete(ctx, t.token, c)
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
