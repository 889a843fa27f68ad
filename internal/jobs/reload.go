package jobs

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// A reload that changes a job's timing supersedes its next slot's entry. A slot the new timing
// still has is kept, with the claim this term made ahead, if any: the new timing's entry for it
// takes it over (a later slot's waits in jobState.carried), or it fires at once if its new fire
// time has passed (a jitter removed after its slot). A slot the new timing lacks is closed.

// reload applies a new table: new jobs get their fences raised, changed ones new timers.
func (t *tenure) reload(specs []*Spec) {
	now := t.r.clock.Now()
	var added []string
	keep := map[string]bool{}
	for _, s := range specs {
		keep[s.Name] = true
		js := t.jobs[s.Name]
		if js == nil {
			added = append(added, s.Name)
			t.addJob(s)
			continue
		}
		old := js.spec
		js.spec, js.removed = s, false
		if !sameTiming(old, s) || js.entry == nil {
			t.reschedule(js, now)
		}
	}
	for name, js := range t.jobs {
		if !keep[name] {
			js.removed, js.queue = true, nil
			t.reschedule(js, now)
			t.unblock(js)
		}
	}
	if len(added) > 0 {
		rctx, cancel := context.WithTimeout(t.claimCtx, t.r.opts.WriteTimeout) // on the loop: bounded
		defer cancel()
		if err := t.raiseUnblocked(rctx, added); err != nil {
			t.lg.Error("raise fences of new jobs; they will not run in this term", zap.Strings("jobs", added), zap.Error(err))
			for _, n := range added {
				t.jobs[n].removed = true
			}
		} else {
			for _, n := range added {
				t.schedule(t.jobs[n], now)
			}
		}
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
		return []scheduler.Completion{skippedRun(e.run.RunID, e.slot.Job, reasonReloaded)}
	}
	return nil
}
