package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"
)

// execute runs one claimed slot to its end: attempts with timeouts and retries with backoff.
// It returns the run's outcome to write to the ledger, or nil when the run was cancelled because
// the term ended or the shutdown grace expired: such a run is left running in the ledger, for
// the next leader to take over.
func (t *term) execute(ctx context.Context, spec *Spec, lr LedgerRun) (runDone, *finished) {
	done := runDone{job: lr.Slot.Job, runID: lr.RunID}
	started := t.r.clock.Now()
	if h := t.r.opts.Hooks.Fired; h != nil {
		h(spec.Name, started.Sub(lr.Slot.At))
	}
	lg := runLog{lg: t.lg, fields: make([]zap.Field, 4, 8)}
	lg.fields[0], lg.fields[1], lg.fields[2], lg.fields[3] = zap.String("job", spec.Name), zap.Time("slot", lr.Slot.At), zap.Int64("run_id", lr.RunID), zap.String("node", t.r.opts.Node)
	attempt := max(lr.Attempt, 1)
	slot := lr.Slot.At.In(spec.Schedule.Location())
	for {
		run := Run{Job: spec.Name, Slot: slot, Token: t.token, Attempt: attempt, RunID: strconv.FormatInt(lr.RunID, 10), Manual: lr.Slot.Manual}
		lg.info("run started", zap.Int("attempt", attempt))
		out, err := t.attempt(ctx, spec, run)
		c := Completion{RunID: lr.RunID, Job: spec.Name, Output: out, Attempt: attempt}
		switch {
		case ctx.Err() != nil && !errors.Is(context.Cause(ctx), errReplaced):
			lg.warn("run interrupted; the next leader takes it over", zap.Int("attempt", attempt), zap.NamedError("cause", context.Cause(ctx)))
			return done, nil
		case ctx.Err() != nil:
			c.Status, c.Error, c.Reason = StatusFailed, errReplaced.Error(), "overlap: replace"
		case err == nil:
			c.Status = StatusSucceeded
		case errors.Is(err, ErrFenced):
			c.Status, c.Error = StatusFenced, err.Error()
			done.fenced = err
		case IsPermanent(err) || attempt > spec.Retries:
			c.Status, c.Error = StatusFailed, err.Error()
		default:
			wait := t.backoff(spec, attempt)
			lg.warn("attempt failed; retrying", zap.Int("attempt", attempt), zap.Duration("in", wait), zap.Error(err))
			if !t.sleep(ctx, wait) {
				continue // cancelled while waiting: the next turn reports it
			}
			wctx, cancel := t.writeCtx(ctx)
			n, err := t.r.opts.Ledger.NextAttempt(wctx, t.token, spec.Name, lr.RunID)
			cancel()
			switch {
			case errors.Is(err, ErrFenced):
				done.fenced = err
				lg.warn("retry fenced out", zap.Error(err))
				return done, nil
			case err != nil:
				lg.warn("record retry", zap.Error(err))
				attempt++
			default:
				// Never count down: a retry made while the store was unreachable was not
				// recorded there, but it was made.
				attempt = max(attempt+1, n)
			}
			continue
		}
		took := t.r.clock.Now().Sub(started)
		return done, &finished{c: c, slot: lr.Slot.At, attempt: attempt, took: took, done: done}
	}
}

// runLog logs the lines of one run with its identifying fields; a run logs few lines, so they
// are encoded with each line rather than kept encoded in a logger of its own.
type runLog struct {
	lg     *zap.Logger
	fields []zap.Field // job, slot, run_id, node; capacity for the fields of a line
}

func (l runLog) info(msg string, extra ...zap.Field) { l.lg.Info(msg, append(l.fields, extra...)...) }
func (l runLog) warn(msg string, extra ...zap.Field) { l.lg.Warn(msg, append(l.fields, extra...)...) }

// complete writes one run's outcome. The write is fenced, so a term that lost leadership cannot
// overwrite what a newer leader decided.
func (t *term) complete(ctx context.Context, f *finished) {
	wctx, cancel := t.writeCtx(ctx)
	defer cancel()
	err := t.r.opts.Ledger.Complete(wctx, t.token, f.c)
	t.finish(f, err)
}

// finish reports how the write of a run's outcome went.
func (t *term) finish(f *finished, err error) {
	c := f.c
	fields := make([]zap.Field, 0, 9)
	fields = append(fields, zap.String("job", c.Job), zap.Time("slot", f.slot), zap.Int64("run_id", c.RunID), zap.String("node", t.r.opts.Node),
		zap.String("status", string(c.Status)), zap.Int("attempt", f.attempt), zap.Duration("took", f.took))
	if c.Error != "" {
		fields = append(fields, zap.String("error", c.Error))
	}
	switch {
	case errors.Is(err, ErrFenced):
		f.done.fenced = err
		t.lg.Warn("run outcome fenced out", append(fields, zap.Error(err))...)
		return
	case err != nil:
		t.lg.Error("record run outcome", append(fields, zap.Error(err))...)
		return
	}
	t.lg.Info("run finished", fields...)
	if h := t.r.opts.Hooks.Finished; h != nil {
		h(c.Job, c.Status, f.took)
	}
}

// writeCtx bounds a ledger write made for a run; it outlives the run's own cancellation so an
// outcome can still be written while the term lasts.
func (t *term) writeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), t.r.opts.WriteTimeout)
}

// attempt runs the executor once, bounded by the job's timeout on the runner's clock.
func (t *term) attempt(ctx context.Context, spec *Spec, run Run) (string, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := t.r.clock.AfterFunc(spec.Timeout, func() { cancel(errRunTimeout) })
	defer timer.Stop()
	out, err := spec.Executor.Execute(actx, run)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errRunTimeout) {
		err = fmt.Errorf("attempt %d timed out after %s: %w", run.Attempt, spec.Timeout, err)
	}
	return out, err
}

// backoff is the wait before retry number attempt: RetryBackoff doubled per earlier retry,
// capped at MaxBackoff.
func (t *term) backoff(spec *Spec, attempt int) time.Duration {
	d := spec.RetryBackoff
	for i := 1; i < attempt && d < t.r.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, t.r.opts.MaxBackoff)
}

// sleep waits d on the runner's clock; false if ctx ended first.
func (t *term) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := t.r.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C():
		return true
	case <-ctx.Done():
		return false
	}
}
