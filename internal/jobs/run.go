package jobs

import (
	"errors"
	"runtime"
	"slices"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/attempts"
	"scheduler/internal/jobs/internal/outcomes"
	"scheduler/internal/jobs/internal/parallel"
)

// launchYield is how many runs the loop starts before it lets them run, for memory, not time: in
// a herd of short runs every goroutine would exist before the first ran, and a herd's memory would
// grow with its size, not with the runs in progress (BENCHMARKS.md, "Fire precision and scale").
const launchYield = 64

// launch starts the run's goroutine. Everything the goroutine reads of the job is taken here, on
// the loop: a reload replaces js.spec while the run goes on.
func (t *tenure) launch(js *jobState, run scheduler.Run) {
	if t.launched++; t.launched%launchYield == 0 {
		runtime.Gosched()
	}
	if js == nil {
		js = t.jobs[run.Job]
	}
	rc := &attempts.Cancel{}
	if t.ended {
		rc.Do(errTermEnded)
	}
	js.active = append(js.active, activeRun{runID: run.RunID, cancel: rc, asked: run.Manual || run.Backfill})
	t.runs++
	t.started.Add(run)
	t.unstarted.Add(1)
	spec := js.spec
	go func() {
		d, f := t.execute(rc, spec, run)
		if f == nil {
			d.js = js
			t.done <- d
			return
		}
		f.js = js
		t.completer.Add(f)
	}()
}

// cancelRuns cancels every run of the tenure with cause, and gives up the outcome writes still
// being retried.
func (t *tenure) cancelRuns(cause error) {
	t.completer.Stop()
	for _, js := range t.jobs {
		for _, a := range js.active {
			a.cancel.Do(cause)
		}
	}
}

// runsDone is runDone for runs whose outcomes were written together; the slots queued behind
// them start together, in one claim.
func (t *tenure) runsDone(ds []runDone) {
	var next []pending
	for _, d := range ds {
		if p, ok := t.finishRun(d); ok {
			next = append(next, p)
		}
	}
	t.startQueued(next)
}

// runDone removes a finished run and starts the next queued slot of its job.
func (t *tenure) runDone(d runDone) {
	if p, ok := t.finishRun(d); ok {
		t.startQueued([]pending{p})
	}
}

// startQueued starts slots taken from their jobs' queues.
func (t *tenure) startQueued(ps []pending) {
	if len(ps) == 0 {
		return
	}
	if err := t.start(t.runsCtx, ps); err != nil {
		t.end(err)
	}
}

// finishRun removes a finished run and returns the next slot queued for its job, if it is to
// start now.
func (t *tenure) finishRun(d runDone) (pending, bool) {
	t.runs--
	js := d.js
	if js == nil {
		js = t.jobs[d.job]
	}
	if d.out != nil {
		outcomes.LogFinished(t.lg, &d.out.c, d.out.slot, d.out.took, d.out.err)
	}
	if i := slices.IndexFunc(js.active, func(a activeRun) bool { return a.runID == d.runID }); i >= 0 {
		js.active = slices.Delete(js.active, i, i+1)
	}
	if d.fenced != nil {
		if err := t.refused(t.claimCtx, d.job, d.fenced); err != nil {
			t.end(err)
		} else if js.blocked && d.out != nil && errors.Is(d.out.err, scheduler.ErrFenced) {
			// Held back, the term going on: the outcome is written once the fence lets it in.
			js.blk.closes = append(js.blk.closes, d.out.c)
		}
	}
	if t.draining {
		if t.runs == 0 && t.drainIdle != nil {
			close(t.drainIdle)
			t.drainIdle = nil
		}
		return pending{}, false
	}
	if len(js.active) == 0 && len(js.queue) > 0 && !t.ended {
		next := js.queue[0]
		js.queue = js.queue[1:]
		return next, true
	}
	return pending{}, false
}

// yieldToStarts lets the runs just launched reach their executors before the caller goes on
// with work that can wait (the next slots, log lines, outcome writes): on a busy machine that
// work would otherwise share the processors with a herd still starting.
func (t *tenure) yieldToStarts() {
	parallel.Yield(t.r.clock, func() bool { return t.unstarted.Load() == 0 })
}

// logStarted writes the start lines of the runs launched in this step. They are written after
// the step, when the runs have started, so that a herd does not wait for its own log lines; a
// run's end line is written when the loop hears of its end, always after.
func (t *tenure) logStarted() {
	started := t.started.Runs()
	if len(started) == 0 {
		return
	}
	t.yieldToStarts()
	t.markStarted(started)
	for _, run := range started {
		t.lg.Info("run started", zap.String("job", run.Job), zap.Time("slot", run.Slot), zap.Int64("run_id", run.RunID),
			zap.Int("attempt", max(run.Attempt, 1)))
	}
	t.started.Reset()
}
