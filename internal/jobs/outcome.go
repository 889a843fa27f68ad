package jobs

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/outcomes"
)

// A run whose executor returned has had its effects: running it again would repeat them. So the
// write of its outcome is retried, with a growing and jittered delay, for as long as the term
// lasts (on a shutdown, until the grace expires), and the run stays active meanwhile: its job's
// overlap policy still sees it, and a drain waits for it. Only when the term ends first is the
// run left running in the ledger, for the next leader, which runs the slot again: for effects the
// store cannot fence, the guarantee is at least once. The outcomes this process could not write
// are kept (outcomes.Kept), so that if it leads again it writes them instead of running their
// slots again.

// outcomeFailed logs a failed write of the outcomes of runs runs, f the first of them, that is
// tried again: one line per write, on the first failure and then every tenth, so that neither a
// herd nor a long outage floods the log.
func (t *tenure) outcomeFailed(f *finished, runs, failures int, wait time.Duration, err error) {
	if failures != 1 && failures%10 != 0 {
		return
	}
	t.lg.Warn("record run outcome; retrying", zap.String("job", f.c.Job), zap.Time("slot", f.slot), zap.Int64("run_id", f.c.RunID),
		zap.Int("attempt", f.attempt), zap.String("status", string(f.c.Status)), zap.Int("runs", runs),
		zap.Int("failures", failures), zap.Duration("in", wait), zap.Error(err))
}

// finish settles how the write of a run's outcome went: a refusal by the fence ends the term
// (through the loop), a written outcome is reported to the Finished hook. The loop logs it
// (logFinished), so that a run's end line always follows its start line.
func (t *tenure) finish(f *finished, err error) {
	f.err = err
	switch {
	case errors.Is(err, scheduler.ErrFenced):
		f.done.fenced = err
	case err == nil:
		if h := t.r.opts.Hooks.Finished; h != nil {
			h(f.c.Job, f.c.Status, f.took)
		}
	case f.lost():
		t.r.unwritten.Keep(f.c)
	}
}

// logFinished writes the end line of a run whose outcome write has returned.
func (t *tenure) logFinished(f *finished) {
	c := f.c
	fields := make([]zap.Field, 0, 9)
	fields = append(fields, zap.String("job", c.Job), zap.Time("slot", f.slot), zap.Int64("run_id", c.RunID),
		zap.String("status", string(c.Status)), zap.Int("attempt", f.attempt), zap.Duration("took", f.took))
	if c.Error != "" {
		fields = append(fields, zap.String("error", c.Error))
	}
	switch err := f.err; {
	case errors.Is(err, scheduler.ErrFenced):
		t.lg.Warn("run outcome fenced out", append(fields, zap.Error(err))...)
	case f.lost():
		t.lg.Warn("run outcome not recorded before the term ended; the next leader runs the slot again", append(fields, zap.Error(err))...)
	case err != nil:
		t.lg.Error("record run outcome", append(fields, zap.Error(err))...)
	default:
		t.lg.Info("run finished", fields...)
	}
}

// lost reports whether f's outcome was never written, and the next leader runs its slot again.
func (f *finished) lost() bool { return outcomes.Retryable(f.err) }

// takeUnwritten splits orphans into those to take over and the completions of those whose
// executors already returned in an earlier term of this process: these are written, not run
// again.
func (t *tenure) takeUnwritten(orphans []scheduler.Run) (rest []scheduler.Run, written []scheduler.Completion) {
	return t.r.unwritten.Take(orphans)
}

// record stores slots that end without running; a failure other than the fence is retried
// with the claims that wait for the store (if the term ends first, the slots stay without a
// row, and a later leader deals with them as slots no leader saw).
func (t *tenure) record(ctx context.Context, outs []scheduler.Outcome) error {
	return t.recorded(ctx, outs, t.recordAll(ctx, outs))
}

// recordAll writes outs in batches of maxClaimBatch and returns each batch's error. It reads only
// t.token and t.r.opts, which no one writes once the tenure exists, so it may run off the loop;
// recorded settles the answers on it.
func (t *tenure) recordAll(ctx context.Context, outs []scheduler.Outcome) []error {
	var errs []error
	for lo := 0; lo < len(outs); lo += maxClaimBatch {
		_, err := t.r.opts.Ledger.RecordMany(ctx, t.token, t.r.opts.Node, outs[lo:min(lo+maxClaimBatch, len(outs))])
		errs = append(errs, err)
	}
	return errs
}

// recorded settles, on the loop, how the batches of recordAll went. A batch refused for a job
// that is then blocked is written again without that job's slots.
func (t *tenure) recorded(ctx context.Context, outs []scheduler.Outcome, errs []error) error {
	for k, err := range errs {
		part := outs[k*maxClaimBatch : min((k+1)*maxClaimBatch, len(outs))]
		part, err, end := withoutRefused(ctx, t, part, func(o scheduler.Outcome) string { return o.Slot.Job }, err, func(rest []scheduler.Outcome) error {
			_, err := t.r.opts.Ledger.RecordMany(ctx, t.token, t.r.opts.Node, rest)
			return err
		})
		switch {
		case end != nil:
			return end
		case err != nil:
			t.recordLater(part, err)
		case len(part) > 0:
			t.retryHeld() // the store is back
			for _, o := range part {
				t.lg.Info("slot recorded", zap.String("job", o.Slot.Job), zap.Time("slot", o.Slot.At), zap.String("status", string(o.Status)), zap.String("reason", o.Reason))
				if h := t.r.opts.Hooks.Recorded; h != nil {
					h(o.Slot.Job, o.Status)
				}
			}
		}
	}
	return nil
}

// closeRuns finishes runs that end without running (claimed ahead, or orphans), in one batch
// when the ledger can. A failure other than the fence is logged: the runs stay running, and a
// later leader closes them.
func (t *tenure) closeRuns(ctx context.Context, cs []scheduler.Completion) error {
	if len(cs) == 0 {
		return nil
	}
	return t.closed(ctx, cs, t.completeAll(ctx, cs))
}

// closed settles, on the loop, how the writes of closeRuns went; errs follow cs.
func (t *tenure) closed(ctx context.Context, cs []scheduler.Completion, errs []error) error {
	for i, c := range cs {
		switch err := errs[i]; {
		case errors.Is(err, scheduler.ErrFenced):
			if rerr := t.refused(ctx, c.Job, err); rerr != nil {
				return rerr
			}
		case err != nil:
			t.lg.Warn("close run", zap.String("job", c.Job), zap.Int64("run_id", c.RunID), zap.String("status", string(c.Status)), zap.Error(err))
		default:
			t.lg.Info("run closed", zap.String("job", c.Job), zap.Int64("run_id", c.RunID), zap.String("status", string(c.Status)), zap.String("reason", c.Reason))
			if h := t.r.opts.Hooks.Recorded; h != nil {
				h(c.Job, c.Status)
			}
		}
	}
	return nil
}

// scrub passes the text a run's outcome carries through Options.Scrub, so that a secret a job
// printed (one read from the daemon's files, say) is not stored where status and history show it.
func (r *Runner) scrub(c *scheduler.Completion) {
	if r.opts.Scrub == nil {
		return
	}
	c.Output = r.opts.Scrub(c.Output)
	c.Error = r.opts.Scrub(c.Error)
}
