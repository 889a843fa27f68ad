package main

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"scheduler/internal/control"
	"scheduler/internal/jobs"
)

// pendingTriggers hands the trigger requests stored in the control state to the runner, once per term.
func (d *daemon) pendingTriggers(ctx context.Context) {
	// Give the runner its takeover first; Trigger waits for the loop anyway.
	reqs, err := d.control.Requests(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.lg.Warn("read trigger requests", zap.Error(err))
		}
		return
	}
	for _, r := range reqs {
		d.handleTrigger(ctx, r)
	}
}

// consumeTriggers hands new trigger requests to the runner while this replica leads; followers
// leave them in the control state for the leader.
func (d *daemon) consumeTriggers(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case r, ok := <-d.watcher.Requests():
			if !ok {
				return nil // closed: the watcher's Run has returned
			}
			d.handleTrigger(ctx, r)
		}
	}
}

func (d *daemon) handleTrigger(ctx context.Context, r control.Request) {
	err := d.runner.Trigger(ctx, r.Job, r.At)
	switch {
	case errors.Is(err, jobs.ErrNotLeading):
		d.lg.Info("trigger left for the next leader", zap.String("job", r.Job), zap.Time("slot", r.At), zap.Error(err))
		return
	case err != nil:
		d.lg.Warn("trigger", zap.String("job", r.Job), zap.Time("slot", r.At), zap.Error(err))
		if errors.Is(err, jobs.ErrUnknownJob) { // else it waits for the next term (a blocked job)
			_ = d.control.Done(ctx, r)
		}
		return
	}
	if err := d.control.Done(ctx, r); err != nil {
		d.lg.Warn("remove handled trigger request", zap.String("job", r.Job), zap.Error(err))
	}
}
