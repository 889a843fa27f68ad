package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/backoff"
)

// execute runs one claimed slot to its end: attempts with timeouts and retries with backoff.
// It returns the run's outcome to write to the ledger, or nil when the run was cancelled because
// the term ended or the shutdown grace expired: such a run is left running in the ledger, for
// the next leader to take over. What only some runs need (retries, interruptions, their log
// lines) lives in the methods it calls, off every run's start path.
func (t *tenure) execute(rc *runCancel, spec *Spec, lr scheduler.Run) (runDone, *finished) {
	started := t.r.clock.Now()
	t.unstarted.Add(-1)
	if h := t.r.opts.Hooks.Fired; h != nil {
		h(spec.Name, started.Sub(lr.ScheduledAt))
	}
	done := runDone{job: lr.Job, runID: lr.RunID}
	attempt := max(lr.Attempt, 1)
	for {
		out, err := t.attempt(rc, spec, lr, attempt)
		c := scheduler.Completion{RunID: lr.RunID, Job: spec.Name, Output: out, Attempt: attempt}
		cause := rc.err()
		switch {
		case cause != nil && !errors.Is(cause, errReplaced):
			t.interrupted(lr, attempt, cause)
			return done, nil
		case cause != nil:
			c.Status, c.Error, c.Reason = scheduler.StatusFailed, errReplaced.Error(), "overlap: replace"
		case err == nil:
			c.Status = scheduler.StatusSucceeded
		case errors.Is(err, scheduler.ErrFenced):
			c.Status, c.Error = scheduler.StatusFenced, err.Error()
			done.fenced = err
		case errors.Is(err, scheduler.ErrRefused):
			c.Status, c.Error, c.Reason = scheduler.StatusFenced, err.Error(), reasonRefused
		case scheduler.IsPermanent(err) || attempt > spec.Retries:
			c.Status, c.Error = scheduler.StatusFailed, err.Error()
		default:
			next, fenced := t.retry(rc, spec, lr, attempt, err)
			if fenced != nil {
				done.fenced = fenced
				return done, nil
			}
			attempt = next
			continue
		}
		t.r.scrub(&c)
		return done, &finished{c: c, slot: lr.ScheduledAt, attempt: attempt, took: t.r.clock.Now().Sub(started), done: done}
	}
}

// interrupted logs a run cut off by the end of the term or of the shutdown grace.
func (t *tenure) interrupted(lr scheduler.Run, attempt int, cause error) {
	t.runLog(lr).Warn("run interrupted; the next leader takes it over", zap.Int("attempt", attempt), zap.NamedError("cause", cause))
}

// retry waits before the retry of a failed attempt and records it; it returns the next
// attempt's number, or the fence's refusal (the term is over). A run cancelled while waiting
// goes on with the same number: the next turn of execute reports the cancellation.
func (t *tenure) retry(rc *runCancel, spec *Spec, lr scheduler.Run, attempt int, err error) (int, error) {
	lg := t.runLog(lr)
	wait := backoff.Wait(spec.RetryBackoff, t.r.opts.MaxBackoff, attempt)
	lg.Warn("attempt failed; retrying", zap.Int("attempt", attempt), zap.Duration("in", wait), zap.String("error", t.r.scrubText(err.Error())))
	if !t.sleep(rc, wait) {
		return attempt, nil
	}
	wctx, cancel := t.writeCtx(t.runsCtx)
	n, err := t.r.opts.Ledger.NextAttempt(wctx, t.token, spec.Name, lr.RunID)
	cancel()
	switch {
	case errors.Is(err, scheduler.ErrFenced):
		lg.Warn("retry fenced out", zap.Error(err))
		return 0, err
	case err != nil:
		lg.Warn("record retry", zap.Error(err))
		attempt++
	default:
		// Never count down: a retry made while the store was unreachable was not recorded
		// there, but it was made.
		attempt = max(attempt+1, n)
	}
	// The first attempt's line is written by the loop (logStarted), off the start path.
	lg.Info("run started", zap.Int("attempt", attempt))
	return attempt, nil
}

// runLog returns the logger of one run's own lines, with its identifying fields.
func (t *tenure) runLog(lr scheduler.Run) *zap.Logger {
	return t.lg.With(zap.String("job", lr.Job), zap.Time("slot", lr.ScheduledAt), zap.Int64("run_id", lr.RunID))
}

// writeCtx bounds a ledger write made for a run; it outlives the run's own cancellation so an
// outcome can still be written while the term lasts.
func (t *tenure) writeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), t.r.opts.WriteTimeout)
}

// attempt runs the executor once, bounded by the job's timeout on the runner's clock.
func (t *tenure) attempt(rc *runCancel, spec *Spec, lr scheduler.Run, attempt int) (string, error) {
	actx, cancel, end := rc.begin(t.runsCtx)
	defer end()
	timer := t.r.clock.AfterFunc(spec.Timeout, func() { cancel(errRunTimeout) })
	defer timer.Stop()
	run := scheduler.Attempt{Job: spec.Name, Slot: lr.ScheduledAt.In(spec.Schedule.Location()), Token: t.token, Attempt: attempt,
		RunID: strconv.FormatInt(lr.RunID, 10), Manual: lr.Manual, Fencer: t.r.opts.Ledger}
	out, err := spec.Executor.Execute(actx, run)
	if err != nil && rc.err() == nil && errors.Is(context.Cause(actx), errRunTimeout) {
		err = fmt.Errorf("attempt %d timed out after %s: %w", attempt, spec.Timeout, err)
	}
	return out, err
}

// sleep waits d on the runner's clock; false if the run was cancelled first.
func (t *tenure) sleep(rc *runCancel, d time.Duration) bool {
	if d <= 0 {
		return rc.err() == nil
	}
	ctx, _, end := rc.begin(t.runsCtx)
	defer end()
	timer := t.r.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C():
		return true
	case <-ctx.Done():
		return false
	}
}
