package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"scheduler"
)

// Reasons recorded for slots that end without running.
const (
	reasonPaused      = "paused"
	reasonOverlapSkip = "overlap: the previous run is still running"
	reasonHeldSkip    = "overlap: another run of the job started while this slot's claim waited for the store"
	// A backlog (slots whose claims waited for the store) fires when the store is back: under
	// overlap skip one of its slots runs and the others are skipped, or all of them when a run
	// started since they fired is in their way.
	reasonBacklogSkip  = "overlap: another slot of the same backlog runs (their claims waited for the store)"
	reasonSameTimeSkip = "overlap: another slot of the job due at the same time runs"
	reasonReloaded     = "the job's schedule changed before the slot"
	reasonRefused      = "receiver refused the token"
)

// fireDue dispatches every slot whose time has come and schedules each job's next slot. A slot
// whose claim ahead is still in flight fires when the answer comes.
func (t *term) fireDue(ctx context.Context) error {
	now := t.r.clock.Now()
	if len(t.blocked) > 0 {
		t.retryBlocked(ctx, now)
	}
	t.claimAhead(now)
	var (
		due     []pending
		closes  []scheduler.Completion
		fired   []*fireEntry
		records []scheduler.Outcome
	)
	for len(t.heap) > 0 && !t.heap.peek().at.After(now) {
		e := t.heap.pop()
		if e.records != nil {
			if !e.dropped {
				e.dropped = true
				records = append(records, e.records...)
			}
			continue
		}
		if e.retry != nil {
			if !e.dropped { // else brought forward by retryHeld, and fired then
				e.dropped = true
				due = append(due, *e.retry)
			}
			continue
		}
		js := e.js
		if js.entry != e {
			// Superseded by a reload: a run claimed ahead for it is closed.
			e.dropped = true
			if e.claim == claimDone && e.written {
				closes = append(closes, scheduler.Completion{RunID: e.run.RunID, Job: e.slot.Job, Status: scheduler.StatusSkipped, Reason: reasonReloaded})
			}
			continue
		}
		js.entry = nil
		fired = append(fired, e)
		if e.claim == claimSent {
			e.late = true
			continue
		}
		if p, ok := t.firing(e); ok {
			due = append(due, p)
		}
	}
	if err := t.closeRuns(ctx, closes); err != nil {
		return err
	}
	if err := t.record(ctx, records); err != nil {
		return err
	}
	if err := t.dispatch(ctx, due); err != nil {
		return err
	}
	// The next slots are computed after the runs started, off their path.
	t.yieldToStarts()
	for _, e := range fired {
		t.scheduleAfter(e.js, e.slot.At)
	}
	return nil
}

// dispatch applies pause and overlap to due slots, then starts the ones that should run. A slot
// that must not run is recorded skipped; one claimed ahead (or an orphan) is completed skipped.
func (t *term) dispatch(ctx context.Context, due []pending) error {
	var (
		start   = make([]pending, 0, len(due))
		records []scheduler.Outcome
		closes  []scheduler.Completion
		// heldStarts: jobs of which a slot whose claim waited for the store starts here.
		heldStarts = map[*jobState]bool{}
		// behind: slots to claim now skipped for a slot starting here, not a run in progress;
		// recorded once that slot's claim landed, else they wait for the store with it.
		behind []skipped
	)
	skip := func(p pending, reason string) {
		switch {
		case p.claimed != nil:
			closes = append(closes, scheduler.Completion{RunID: p.claimed.RunID, Job: p.slot.Job, Status: scheduler.StatusSkipped, Reason: reason})
		case p.orphan != nil:
			closes = append(closes, scheduler.Completion{RunID: p.orphan.RunID, Job: p.slot.Job, Status: scheduler.StatusSkipped, Reason: reason})
		default:
			records = append(records, scheduler.Outcome{Slot: p.slot, Status: scheduler.StatusSkipped, Reason: reason})
		}
	}
	for _, p := range due {
		js := p.js
		if js == nil {
			js = t.jobs[p.slot.Job]
		}
		if js == nil || js.blocked {
			continue // a blocked job's slots are not recorded: the store refuses its writes
		}
		p.js = js
		if !p.slot.Manual && t.paused(js.spec.Name) {
			skip(p, reasonPaused)
			continue
		}
		if len(js.active)+js.starting > 0 {
			switch js.spec.Overlap {
			case OverlapSkip:
				if len(js.active) == 0 && p.claimed == nil && p.orphan == nil {
					r := reasonSameTimeSkip
					if heldStarts[js] {
						r = reasonBacklogSkip
					}
					behind = append(behind, skipped{p, r})
					continue
				}
				switch {
				case heldStarts[js]:
					skip(p, reasonBacklogSkip)
				case p.held:
					// It found no run in progress when it fired (else it was skipped then): the
					// run in its way started since.
					skip(p, reasonHeldSkip)
				case len(js.active) == 0:
					skip(p, reasonSameTimeSkip)
				default:
					skip(p, reasonOverlapSkip)
				}
				continue
			case OverlapQueue:
				js.queue = append(js.queue, p)
				continue
			case OverlapReplace:
				for _, a := range js.active {
					a.cancel.do(errReplaced)
				}
			}
		}
		js.starting++
		if p.held {
			heldStarts[js] = true
		}
		start = append(start, p)
	}
	for _, p := range start {
		p.js.starting = 0
	}
	if err := t.record(ctx, records); err != nil {
		return err
	}
	if err := t.closeRuns(ctx, closes); err != nil {
		return err
	}
	if err := t.start(ctx, start); err != nil {
		return err
	}
	return t.settleBehind(ctx, behind)
}

// record stores slots that end without running; a failure other than the fence is retried
// with the claims that wait for the store (if the term ends first, the slots stay without a
// row, and a later leader deals with them as slots no leader saw).
func (t *term) record(ctx context.Context, outs []scheduler.Outcome) error {
	return t.recorded(ctx, outs, t.recordAll(ctx, outs))
}

// recordAll writes outs in batches of maxClaimBatch and returns each batch's error. It touches
// no state of the loop, so a takeover runs it beside its claims; recorded settles the answers.
func (t *term) recordAll(ctx context.Context, outs []scheduler.Outcome) []error {
	var errs []error
	for lo := 0; lo < len(outs); lo += maxClaimBatch {
		_, err := t.r.opts.Ledger.RecordMany(ctx, t.token, t.r.opts.Node, outs[lo:min(lo+maxClaimBatch, len(outs))])
		errs = append(errs, err)
	}
	return errs
}

// recorded settles, on the loop, how the batches of recordAll went. A batch refused for a job
// that is then blocked is written again without that job's slots.
func (t *term) recorded(ctx context.Context, outs []scheduler.Outcome, errs []error) error {
	for k, err := range errs {
		part := outs[k*maxClaimBatch : min((k+1)*maxClaimBatch, len(outs))]
		switch {
		case errors.Is(err, scheduler.ErrFenced):
			slots := make([]scheduler.SlotKey, len(part))
			for i, o := range part {
				slots[i] = o.Slot
			}
			if rerr := t.refused(ctx, batchJob(slots), err); rerr != nil {
				return rerr
			}
			rest := slices.DeleteFunc(slices.Clone(part), func(o scheduler.Outcome) bool { return t.isBlocked(o.Slot.Job) })
			if len(rest) == len(part) {
				return t.fenced(part[0].Slot.Job, err)
			}
			if err := t.record(ctx, rest); err != nil {
				return err
			}
		case err != nil:
			t.recordLater(part, err)
		default:
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
func (t *term) closeRuns(ctx context.Context, cs []scheduler.Completion) error {
	if len(cs) == 0 {
		return nil
	}
	return t.closed(ctx, cs, t.completeAll(ctx, cs))
}

// closed settles, on the loop, how the writes of closeRuns went; errs follow cs.
func (t *term) closed(ctx context.Context, cs []scheduler.Completion, errs []error) error {
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

// start claims fresh slots in one batch, takes over orphans and launches the runs, those claimed
// ahead at once. A ledger failure other than the fence puts the slots back to be retried shortly.
func (t *term) start(ctx context.Context, ps []pending) error {
	var (
		fresh   []scheduler.SlotKey
		orphans []scheduler.Run
	)
	for _, p := range ps {
		switch {
		case p.claimed != nil:
			t.launch(p.js, *p.claimed)
		case p.orphan != nil:
			orphans = append(orphans, *p.orphan)
		default:
			fresh = append(fresh, p.slot)
		}
	}
	if err := t.reclaimAll(ctx, orphans); err != nil {
		return err
	}
	if len(fresh) == 0 {
		return nil
	}
	if len(fresh) <= maxClaimBatch {
		claimed, err := t.r.opts.Ledger.ClaimMany(ctx, t.token, t.r.opts.Node, fresh)
		return t.claimedNow(ctx, fresh, claimed, err)
	}
	// A large batch (a takeover's catch-up) is claimed in parts, maxClaimsInFlight at once; the
	// runs of each part are launched here, on the loop goroutine, as soon as it is claimed.
	type part struct {
		slots   []scheduler.SlotKey
		claimed []scheduler.Result
		err     error
	}
	var parts []*part
	for lo := 0; lo < len(fresh); lo += maxClaimBatch {
		parts = append(parts, &part{slots: fresh[lo:min(lo+maxClaimBatch, len(fresh))]})
	}
	return inParallel(len(parts), maxClaimsInFlight, func(i int) {
		p := parts[i]
		p.claimed, p.err = t.r.opts.Ledger.ClaimMany(ctx, t.token, t.r.opts.Node, p.slots)
	}, func(i int) error {
		p := parts[i]
		return t.claimedNow(ctx, p.slots, p.claimed, p.err)
	})
}

// claimedNow launches the runs of fresh slots claimed now.
func (t *term) claimedNow(ctx context.Context, fresh []scheduler.SlotKey, claimed []scheduler.Result, err error) error {
	// A claim refused for a job that is then blocked is made again without that job's slots.
	for errors.Is(err, scheduler.ErrFenced) {
		if rerr := t.refused(ctx, batchJob(fresh), err); rerr != nil {
			return rerr
		}
		rest := t.withoutBlocked(fresh)
		switch {
		case len(rest) == len(fresh):
			return t.fenced(fresh[0].Job, err)
		case len(rest) == 0:
			return nil
		}
		fresh = rest
		claimed, err = t.r.opts.Ledger.ClaimMany(ctx, t.token, t.r.opts.Node, fresh)
	}
	switch {
	case err != nil:
		t.retryLater(fresh, err)
		return nil
	}
	t.failures = 0
	t.retryHeld()
	for _, c := range claimed {
		switch {
		case c.Written:
			t.launch(nil, c.Run)
		case c.Run.Status == scheduler.StatusRunning && c.Run.Token < t.token:
			if err := t.reclaim(ctx, c.Run); err != nil {
				return err
			}
		default:
			t.lg.Info("slot already has a run", zap.String("job", c.Run.Job), zap.Time("slot", c.Run.ScheduledAt),
				zap.String("status", string(c.Run.Status)), zap.Int64("run_token", c.Run.Token))
		}
	}
	return nil
}

// reclaimAll takes over runs older leaders left running, and runs them again: in batches of
// ReclaimMany, maxClaimsInFlight at once, each part's runs launched as soon as it is taken over
// (the runs' executors start as the batches land, not after the last one). Their runs are
// launched here, on the loop goroutine.
func (t *term) reclaimAll(ctx context.Context, orphans []scheduler.Run) error {
	orphans, written := t.takeUnwritten(orphans)
	if err := t.closeRuns(ctx, written); err != nil {
		return err
	}
	if len(orphans) <= 1 {
		for _, o := range orphans {
			if err := t.reclaim(ctx, o); err != nil {
				return err
			}
		}
		return nil
	}
	runs := make([]scheduler.Run, len(orphans))
	errs := make([]error, len(orphans))
	n := (len(orphans) + maxClaimBatch - 1) / maxClaimBatch
	bounds := func(k int) (int, int) { return k * maxClaimBatch, min((k+1)*maxClaimBatch, len(orphans)) }
	return inParallel(n, maxClaimsInFlight, func(k int) {
		lo, hi := bounds(k)
		part := orphans[lo:hi]
		slots := make([]scheduler.SlotKey, len(part))
		for i, o := range part {
			slots[i] = o.Key()
		}
		got, err := t.r.opts.Ledger.ReclaimMany(ctx, t.token, t.r.opts.Node, slots)
		if err == nil && len(got) != len(part) {
			err = fmt.Errorf("the ledger answered %d takeovers for %d runs", len(got), len(part))
		}
		for i := range part {
			switch {
			case err != nil:
				errs[lo+i] = err
			case !got[i].Written:
				errs[lo+i] = fmt.Errorf("run %d of job %q is no longer an orphan", part[i].RunID, part[i].Job)
			default:
				runs[lo+i] = got[i].Run
			}
		}
	}, func(k int) error {
		lo, hi := bounds(k)
		for i := lo; i < hi; i++ {
			if err := t.reclaimed(orphans[i], runs[i], errs[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// reclaim takes over a run an older leader left running, and runs it again.
func (t *term) reclaim(ctx context.Context, orphan scheduler.Run) error {
	if _, written := t.takeUnwritten([]scheduler.Run{orphan}); len(written) > 0 {
		return t.closeRuns(ctx, written)
	}
	run, err := t.r.opts.Ledger.Reclaim(ctx, t.token, t.r.opts.Node, orphan.Key())
	return t.reclaimed(orphan, run, err)
}

// reclaimed launches a run taken over, or reports why it could not be.
func (t *term) reclaimed(orphan, run scheduler.Run, err error) error {
	switch {
	case errors.Is(err, scheduler.ErrFenced):
		if job, _ := refusedJob(err, orphan.Job); job != orphan.Job {
			// A batch refused for another job: once that job is blocked, this one is taken over
			// on its own.
			if rerr := t.refused(t.claimCtx, job, err); rerr != nil {
				return rerr
			}
			return t.reclaim(t.claimCtx, orphan)
		}
		return t.refused(t.claimCtx, orphan.Job, err)
	case err != nil:
		t.lg.Warn("take over run", zap.String("job", orphan.Job), zap.Time("slot", orphan.ScheduledAt), zap.Int64("run_id", orphan.RunID), zap.Error(err))
		return nil
	}
	t.lg.Info("run taken over", zap.String("job", run.Job), zap.Time("slot", run.ScheduledAt), zap.Int64("run_id", run.RunID),
		zap.Int64("old_token", orphan.Token), zap.Int("attempt", run.Attempt))
	t.launch(nil, run)
	return nil
}
