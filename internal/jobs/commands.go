package jobs

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// The commands below run on the loop goroutine, sent there by the Runner (send).

// drain stops firing; idle is closed once no run is left.
func (t *tenure) drain(idle chan struct{}) {
	t.draining = true
	t.heap.Reset()
	t.queue.Reset()
	t.pendingClaims = nil
	for _, js := range t.jobs {
		js.entry, js.queue = nil, nil
	}
	if t.runs == 0 {
		close(idle)
		return
	}
	t.drainIdle = idle
	t.lg.Info("draining", zap.Int("runs", t.runs))
}

// trigger starts the manual run of job at slot at.
func (t *tenure) trigger(job string, at time.Time) error {
	at = at.UTC().Truncate(time.Microsecond)
	return t.startSlot("trigger", scheduler.SlotKey{Job: job, At: at, Manual: true}, t.dispatch)
}

// backfill claims and starts a past slot for a backfill request, whatever pause and overlap say.
func (t *tenure) backfill(slot scheduler.SlotKey) error {
	slot.At, slot.Manual = slot.At.UTC().Truncate(time.Microsecond), false
	return t.startSlot("backfill", slot, t.start)
}

// startSlot hands a slot someone asked for to start, unless its job cannot run in this tenure.
func (t *tenure) startSlot(what string, slot scheduler.SlotKey, start func(context.Context, []pending) error) error {
	job, js := slot.Job, t.jobs[slot.Job]
	if js == nil || js.removed {
		return fmt.Errorf("%s %q: %w", what, job, ErrUnknownJob)
	}
	if js.blocked {
		return fmt.Errorf("%s %q: %s", what, job, js.reason)
	}
	if t.draining {
		return fmt.Errorf("%s %q: shutting down: %w", what, job, ErrNotLeading)
	}
	if slot.Manual {
		t.lg.Info("manual run requested", zap.String("job", job), zap.Time("slot", slot.At))
	} else {
		t.lg.Info("backfill slot requested", zap.String("job", job), zap.Time("slot", slot.At), zap.Int64("backfill", slot.Backfill))
	}
	return start(t.runsCtx, []pending{{slot: slot}})
}

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
			js.entry = nil // its heap entry is now stale and skipped
			t.schedule(js, now)
		}
	}
	for name, js := range t.jobs {
		if !keep[name] {
			js.removed, js.entry, js.queue = true, nil, nil
			t.unblock(js)
		}
	}
	if len(added) > 0 {
		if err := t.raiseUnblocked(t.claimCtx, added); err != nil {
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
