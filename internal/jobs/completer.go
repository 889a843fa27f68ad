package jobs

import (
	"context"
	"time"

	"scheduler"

	"scheduler/internal/jobs/internal/outcomes"
)

// finished is a run whose outcome is to be written; the completer queues pointers to it. It is
// kept small: a herd's runs may all wait in the completer at once.
type finished struct {
	c    scheduler.Completion // c.Attempt is the run's last attempt
	slot time.Time
	took time.Duration
	js   *jobState
	// fenced is the store's refusal of the term's token, by one of the run's writes or by the
	// write of its outcome (finish).
	fenced error
	err    error // the write's answer, set by finish
}

// runDone is the report of f's run to the loop once its outcome was written.
func (f *finished) runDone() runDone {
	return runDone{js: f.js, job: f.c.Job, runID: f.c.RunID, fenced: f.fenced, out: f}
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
		ds[i] = f.runDone()
	}
	c.t.doneMany <- ds
}

// Retrying logs a failed write of outcomes that is tried again.
func (c completer) Retrying(f *finished, runs, failures int, wait time.Duration, err error) {
	outcomes.LogRetrying(c.t.lg, &f.c, f.slot, runs, failures, wait, err)
}

// completeAll finishes runs (outcomes.Complete). Like recordAll it reads only t.token and
// t.r.opts, so the completer and a takeover call it off the loop.
func (t *tenure) completeAll(ctx context.Context, cs []scheduler.Completion) []error {
	return outcomes.Complete(ctx, t.led, t.token, cs, t.r.blocked.Has)
}
