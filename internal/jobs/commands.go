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
		js.entry, js.queue, js.carried = nil, nil, nil // claims a reload kept stay running, for the next leader
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
		return fmt.Errorf("%s %q: %s", what, job, js.blk.reason)
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
