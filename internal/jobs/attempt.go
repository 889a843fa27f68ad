package jobs

import (
	"context"

	"scheduler"

	"scheduler/internal/jobs/internal/attempts"
)

// execute runs one claimed slot to its end (package attempts). It returns the run's outcome to
// write to the ledger, or nil when the run was cut off because the term ended or the shutdown
// grace expired: such a run is left running in the ledger, for the next leader to take over.
func (t *tenure) execute(rc *attempts.Cancel, spec *Spec, lr scheduler.Run) (runDone, *finished) {
	started := t.r.clock.Now()
	t.unstarted.Add(-1)
	if h := t.r.opts.Hooks.Fired; h != nil {
		h(spec.Name, started.Sub(lr.ScheduledAt))
	}
	job := attemptJob(spec)
	f := &finished{slot: lr.ScheduledAt}
	res := t.attempts.Run(t.runsCtx, rc, &job, &lr, &f.c)
	if res.Cut {
		return runDone{job: lr.Job, runID: lr.RunID, fenced: res.Fenced}, nil
	}
	t.r.scrub(&f.c)
	t.notifyFinished(spec, &lr, &f.c, res.Attempt)
	f.took, f.fenced = t.r.clock.Now().Sub(started), res.Fenced
	return runDone{}, f
}

// writeCtx bounds a ledger write made for a run; it outlives the run's own cancellation so an
// outcome can still be written while the term lasts.
func (t *tenure) writeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), t.r.opts.WriteTimeout)
}
