package jobs

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/attempts"
	"scheduler/internal/jobs/internal/outcomes"
)

// A run whose executor returned has had its effects, so its outcome's write is retried while the
// term lasts, the run active meanwhile (doc.go). Outcomes this process could not write are kept
// (outcomes.Kept): if it leads again, it writes them instead of running their slots again.

// finish settles how the write of a run's outcome went: a refusal by the fence ends the term or
// holds the job back (through the loop; the outcome is kept), a written outcome is reported to
// the Finished hook. The loop logs it
// (outcomes.LogFinished), so that a run's end line always follows its start line.
func (t *tenure) finish(f *finished, err error) {
	f.err = err
	switch {
	case errors.Is(err, scheduler.ErrFenced):
		f.fenced = err
		t.r.unwritten.Keep(f.c, f.took) // for a later term of this process, should this one end
	case err == nil:
		if h := t.r.opts.Hooks.Finished; h != nil {
			h(f.c.Job, f.c.Status, f.took)
		}
	case outcomes.Retryable(err):
		t.r.unwritten.Keep(f.c, f.took)
	}
}

// takeUnwritten returns the orphans to take over, without those whose executors returned in an
// earlier term of this process: their kept outcomes are written as if their runs returned now
// (retried while the term lasts, the run active meanwhile), not run again.
func (t *tenure) takeUnwritten(orphans []scheduler.Run) (rest []scheduler.Run) {
	rest, kept := t.r.unwritten.Take(orphans)
	for _, u := range kept {
		js := t.jobs[u.C.Job]
		js.active = append(js.active, activeRun{runID: u.C.RunID, cancel: &attempts.Cancel{}})
		t.runs++
		t.completer.Add(&finished{c: u.C, slot: u.Slot, took: u.Took, js: js})
	}
	return rest
}

// record stores slots that end without running; a failure other than the fence is retried
// with the claims that wait for the store (if the term ends first, the slots stay without a
// row, and a later leader deals with them as slots no leader saw). A slot found with a run left
// running (leftRunning) has that run closed with the outcome instead.
func (t *tenure) record(ctx context.Context, outs []scheduler.Outcome) error {
	return t.recorded(ctx, outs, t.recordAll(ctx, outs))
}

// recordBatch is the ledger's answer to a batch of recordAll.
type recordBatch struct {
	res []scheduler.Result
	err error
}

// recordAll writes outs in batches of maxClaimBatch and returns each batch's answer. It reads
// only t.token and t.r.opts, which no one writes once the tenure exists, so it may run off the
// loop; recorded settles the answers on it.
func (t *tenure) recordAll(ctx context.Context, outs []scheduler.Outcome) []recordBatch {
	var bs []recordBatch
	for lo := 0; lo < len(outs); lo += maxClaimBatch {
		res, err := t.led.RecordMany(ctx, t.token, t.r.opts.Node, outs[lo:min(lo+maxClaimBatch, len(outs))])
		bs = append(bs, recordBatch{res, err})
	}
	return bs
}

// recorded settles, on the loop, how the batches of recordAll went. A batch refused for a job
// that is then blocked is written again without that job's slots.
func (t *tenure) recorded(ctx context.Context, outs []scheduler.Outcome, bs []recordBatch) error {
	var closes []scheduler.Completion
	for k, b := range bs {
		part, res := outs[k*maxClaimBatch:min((k+1)*maxClaimBatch, len(outs))], b.res
		part, err, end := withoutRefused(ctx, t, part, func(o scheduler.Outcome) string { return o.Slot.Job }, b.err, func(rest []scheduler.Outcome) (err error) {
			res, err = t.led.RecordMany(ctx, t.token, t.r.opts.Node, rest)
			return err
		})
		switch {
		case end != nil:
			return end
		case err != nil:
			t.writeLater(heldWrite{records: part}, err)
		case len(part) > 0:
			t.retryHeld() // the store is back
			for i, o := range part {
				if i < len(res) && t.leftRunning(res[i]) {
					closes = append(closes, scheduler.Completion{RunID: res[i].Run.RunID, Job: o.Slot.Job, Status: o.Status, Reason: o.Reason, Notice: o.Notice})
					continue
				}
				t.lg.Info("slot recorded", zap.String("job", o.Slot.Job), zap.Time("slot", o.Slot.At), zap.String("status", string(o.Status)), zap.String("reason", o.Reason))
				if h := t.r.opts.Hooks.Recorded; h != nil {
					h(o.Slot.Job, o.Status)
				}
			}
		}
	}
	return t.closeRuns(ctx, closes)
}

// leftRunning reports whether a record found r's run running and not run by this term: an older
// leader's, or this term's claim or takeover whose answer was lost.
func (t *tenure) leftRunning(r scheduler.Result) bool {
	return !r.Written && r.Run.Status == scheduler.StatusRunning && (r.Run.Token < t.token || t.ownClaim(r.Run))
}

// closeRuns finishes runs that end without running (claimed ahead, or orphans), in one batch
// when the ledger can. A write the store did not take is retried with the claims that wait for
// it, while the term lasts.
func (t *tenure) closeRuns(ctx context.Context, cs []scheduler.Completion) error {
	if len(cs) == 0 {
		return nil
	}
	return t.closed(ctx, cs, t.completeAll(ctx, cs))
}

// closed settles, on the loop, how the writes of closeRuns went; errs follow cs.
func (t *tenure) closed(ctx context.Context, cs []scheduler.Completion, errs []error) error {
	var (
		later    heldWrite
		laterErr error
	)
	for i, c := range cs {
		switch err := errs[i]; {
		case errors.Is(err, scheduler.ErrFenced) || errors.Is(err, scheduler.ErrFenceHeld):
			if rerr := t.refused(ctx, c.Job, err); rerr != nil {
				return rerr
			}
			if js := t.jobs[c.Job]; js != nil && js.blocked {
				js.blk.closes = append(js.blk.closes, c) // closed once the job runs again
			}
		case outcomes.Retryable(err) && !t.ended:
			later.closes, laterErr = append(later.closes, c), err
		case err != nil:
			t.lg.Warn("close run", zap.String("job", c.Job), zap.Int64("run_id", c.RunID), zap.String("status", string(c.Status)), zap.Error(err))
		default:
			t.lg.Info("run closed", zap.String("job", c.Job), zap.Int64("run_id", c.RunID), zap.String("status", string(c.Status)), zap.String("reason", c.Reason))
			if h := t.r.opts.Hooks.Recorded; h != nil {
				h(c.Job, c.Status)
			}
		}
	}
	if len(later.closes) > 0 {
		t.writeLater(later, laterErr)
	}
	return nil
}

// scrub passes a run's outcome through Options.Scrub, so that status and history show no secret a
// job printed; a kind that cuts its output scrubs it before the cut too (Options.Live's Scrub).
func (r *Runner) scrub(c *scheduler.Completion) {
	if r.opts.Scrub == nil {
		return
	}
	c.Output = r.opts.Scrub(c.Output)
	c.Error = r.opts.Scrub(c.Error)
}
