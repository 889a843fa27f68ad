package jobs

import (
	"cmp"
	"slices"
	"time"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/jobspec"
)

// A reload that changes a job's timing supersedes its next slot's entry. A slot the new timing
// still has is kept, with the claim this term made ahead, if any: the new timing's entry for it
// takes it over (a later slot's waits in jobState.carried), or it fires at once if its new fire
// time has passed (a jitter removed after its slot). A slot the new timing lacks is closed, as
// are the slots of a job the reload removes or disables, wherever they wait (jobState.gone).

// reload applies a new table: new jobs get their fences raised (raiseAdded), changed ones new
// timers.
func (t *tenure) reload(specs []*Spec) {
	now := t.r.clock.Now()
	added, keep, gone := []string(nil), map[string]bool{}, []pending(nil)
	for _, s := range specs {
		keep[s.Name] = true
		js := t.jobs[s.Name]
		if fresh := js != nil && js.removed && js.blk != nil && js.blk.fresh; js == nil || fresh {
			if added = append(added, s.Name); fresh { // removed before its fence was raised
				js.spec, js.removed = s, false
			} else {
				t.addJob(s)
			}
			continue
		}
		old := js.spec
		js.spec, js.removed = s, false
		if !jobspec.SameTiming(old, s) || js.entry == nil {
			t.reschedule(js, now)
		}
		if old.Enabled && !s.Enabled {
			gone = append(gone, js.stop()...)
		}
	}
	for name, js := range t.jobs {
		if !keep[name] && !js.removed {
			js.removed = true
			gone = append(gone, js.stop()...)
			t.reschedule(js, now)
			t.unblock(js)
		}
	}
	if err := t.dispatch(t.claimCtx, gone); err != nil { // closes them (jobState.gone)
		t.end(err)
	}
	if len(added) > 0 {
		t.raiseAdded(added)
	}
	t.lg.Info("table reloaded", zap.Int("jobs", len(specs)), zap.Strings("added", added))
}

// reschedule queues js's next slot by its new timing, and settles the claims of the entries
// it supersedes (its stale heap entry is skipped when it pops).
func (t *tenure) reschedule(js *jobState, now time.Time) {
	claims, closes := append(js.carried, js.entry), []scheduler.Completion(nil)
	js.entry, js.carried = nil, nil
	for _, e := range claims {
		if s := js.spec; e == nil {
			continue // no next slot
		} else if !js.removed && s.Enabled && s.Schedule.Next(e.slot.At.Add(-time.Second)).At.Equal(e.slot.At) {
			e.carried = true
			js.carried = append(js.carried, e)
		} else {
			closes = append(closes, e.drop()...)
		}
	}
	t.schedule(js, now)
	var due []pending
	js.carried = slices.DeleteFunc(js.carried, func(e *fireEntry) bool {
		if js.entry != nil && e.slot.At.After(js.entry.slot.At) {
			return false // fires when its entry is made
		}
		// Its new fire time has passed: it fires now, or when its claim answers.
		if e.late = e.claim == claimSent; !e.late {
			if p, ok := t.firing(e); ok {
				due = append(due, p)
			}
		}
		return true
	})
	if err := t.closeRuns(t.claimCtx, closes); err != nil {
		t.end(err)
	} else if err := t.dispatch(t.claimCtx, due); err != nil {
		t.end(err)
	}
}

// takeCarried gives e, the entry just made for a slot of js, the claim a reload kept for the
// slot, if any, and reports whether it did.
func (t *tenure) takeCarried(js *jobState, e *fireEntry) bool {
	i := slices.IndexFunc(js.carried, func(c *fireEntry) bool { return c.slot.At.Equal(e.slot.At) })
	if i < 0 {
		return false
	}
	c := js.carried[i]
	if js.carried = slices.Delete(js.carried, i, i+1); c.claim == claimNone {
		return false // not claimed ahead: e is, as any new entry
	}
	e.claim, e.run, e.written, c.moved = c.claim, c.run, c.written, e
	return true
}

// drop gives e's claim up: a run claimed for it is closed skipped, now or when the claim
// answers.
func (e *fireEntry) drop() []scheduler.Completion {
	e.carried, e.dropped = false, true
	if e.claim == claimDone && e.written {
		return []scheduler.Completion{skippedRun(e.run.RunID, e.slot.Job, e.js.dropReason(e.slot))}
	}
	return nil
}

// stop ends what a job removed or disabled has under way: its runs retry no more, and the slots
// queued behind them are returned, for dispatch to close.
func (js *jobState) stop() (queued []pending) {
	for _, a := range js.active {
		if js.removed || !a.asked {
			a.cancel.Final()
		}
	}
	js.queue = slices.DeleteFunc(js.queue, func(p pending) bool {
		if js.gone(p.slot) != "" {
			queued = append(queued, p)
			return true
		}
		return false
	})
	return queued
}

// gone says why js no longer runs slot (removed, or disabled but for a slot asked for by hand or
// by a backfill); "": it does.
func (js *jobState) gone(slot scheduler.SlotKey) string {
	if js.removed {
		return reasonRemoved
	} else if !js.spec.Enabled && !slot.Manual && slot.Backfill == 0 {
		return reasonDisabled
	}
	return ""
}

// dropReason is why a claim of slot that a reload superseded is closed.
func (js *jobState) dropReason(slot scheduler.SlotKey) string {
	return cmp.Or(js.gone(slot), reasonReloaded)
}
