package jobs

import (
	"context"
	"time"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/attempts"
	"scheduler/internal/jobs/internal/overlap"
)

// Reasons recorded for slots that end without running, but for the overlap policy's.
const (
	reasonPaused   = "paused"
	reasonReloaded = "the job's schedule changed before the slot"
	reasonRemoved  = "the job was removed from the table"
	reasonDisabled = "the job was disabled"
)

// fireChunk is how many due slots fireDue dispatches at once: a herd is started a part at a
// time, so that what its slots need until they start is held for a part, not for the whole herd.
const fireChunk = 4096

// skippedRun completes a run that is not started after all, saying why.
func skippedRun(runID int64, job, reason string) scheduler.Completion {
	return scheduler.Completion{RunID: runID, Job: job, Status: scheduler.StatusSkipped, Reason: reason}
}

// fireDue dispatches every slot whose time has come, fireChunk at a time, and schedules each
// job's next slot. A slot whose claim ahead is still in flight fires when the answer comes.
func (t *tenure) fireDue(ctx context.Context) error {
	now := t.r.clock.Now()
	if len(t.blocked) > 0 {
		t.retryBlocked(ctx, now)
	}
	t.claimAhead(now)
	var (
		firedJobs []*jobState
		firedAt   []time.Time
	)
	for more := true; more; {
		var (
			due     []pending
			closes  []scheduler.Completion
			records []scheduler.Outcome
		)
		for len(due) < fireChunk && t.heap.Len() > 0 && !t.heap.Peek().at.After(now) {
			e := t.heap.Pop()
			if e.held != nil {
				if !e.dropped {
					e.dropped = true
					records, closes = append(records, e.held.records...), append(closes, e.held.closes...)
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
				// Superseded: a run claimed ahead for it is closed, unless a reload kept its slot.
				if !e.carried && !e.dropped {
					closes = append(closes, e.drop()...)
				}
				continue
			}
			js.entry = nil
			firedJobs, firedAt = append(firedJobs, js), append(firedAt, e.slot.At)
			if e.claim == claimSent {
				e.late = true
				continue
			}
			if p, ok := t.firing(e); ok {
				due = append(due, p)
			}
		}
		more = len(due) == fireChunk
		if err := t.closeRuns(ctx, closes); err != nil {
			return err
		}
		if err := t.record(ctx, records); err != nil {
			return err
		}
		if err := t.dispatch(ctx, due); err != nil {
			return err
		}
	}
	// The next slots are computed after the runs started, off their path (fired entries let go).
	t.yieldToStarts()
	for i, js := range firedJobs {
		t.scheduleAfter(js, firedAt[i])
	}
	return nil
}

// dispatch applies pause and overlap to due slots, then starts the ones that should run. A slot
// that must not run is recorded skipped; one claimed ahead (or an orphan) is completed skipped.
func (t *tenure) dispatch(ctx context.Context, due []pending) error {
	var (
		start      = due[:0] // filtered in place: a herd's slots are not held twice
		records    []scheduler.Outcome
		closes     []scheduler.Completion
		heldStarts = map[*jobState]bool{} // jobs of which a slot whose claim waited for the store starts here
		// behind: slots skipped for a slot starting here (overlap.Behind), recorded once that
		// slot's claim landed, else waiting for the store with it.
		behind []skipped
	)
	skip := func(p pending, reason string) {
		if id, ok := p.runID(); ok {
			closes = append(closes, skippedRun(id, p.slot.Job, reason))
		} else {
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
		if reason := js.gone(p.slot); reason != "" {
			skip(p, reason)
			continue
		}
		if !p.slot.Manual && t.paused(js.spec.Name) {
			skip(p, reasonPaused)
			continue
		}
		switch act, reason := overlap.Decide(overlap.Slot{Policy: overlap.Policy(js.spec.Overlap), Active: len(js.active), Starting: js.starting,
			HasRun: p.claimed || p.orphan != nil, Held: p.held, HeldStarts: heldStarts[js]}); act {
		case overlap.Skipped:
			skip(p, reason)
			continue
		case overlap.Behind:
			behind = append(behind, skipped{p, reason})
			continue
		case overlap.Queued:
			js.queue = append(js.queue, p)
			continue
		case overlap.Replacing:
			for _, a := range js.active {
				a.cancel.Do(attempts.ErrReplaced)
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

// firing turns a slot that fires into what dispatch decides on: a run claimed ahead, an orphan to
// take over, or a slot to claim now. false: the slot already has a run of its own.
func (t *tenure) firing(e *fireEntry) (pending, bool) {
	p := pending{slot: e.slot, js: e.js}
	if o, ok := e.js.ahead[e.slot.At.UnixMicro()]; ok {
		delete(e.js.ahead, e.slot.At.UnixMicro())
		if e.claim != claimDone {
			p.orphan = &o
			return p, true
		}
	}
	if e.claim != claimDone {
		return p, true
	}
	switch {
	case e.written || t.ownClaim(e.run.Run(e.slot)):
		p.claim, p.claimed = e.run, true
	case e.run.Status == scheduler.StatusRunning && e.run.Token < t.token:
		p.orphan = e.run.Ref(e.slot)
	default:
		t.lg.Info("slot already has a run", zap.String("job", e.slot.Job), zap.Time("slot", e.slot.At),
			zap.String("status", string(e.run.Status)), zap.Int64("run_token", e.run.Token))
		return p, false
	}
	return p, true
}
