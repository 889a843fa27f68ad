package main

import (
	"context"
	"time"

	"scheduler"
	"scheduler/cmd/scheduler/internal/view"
	"scheduler/internal/schedule"
	"scheduler/internal/status"
)

// The web console reads what `status` reads, and the runs, the outbox and who paused what from
// the same store and control state, so that every replica's console shows the cluster's view.
var (
	_ status.ConsoleSource = statusSource{}
	_ status.Control       = consoleControl{}
)

func (s statusSource) History(ctx context.Context, job string, limit int) ([]scheduler.Run, error) {
	return s.store.History(ctx, job, limit)
}

func (s statusSource) Outbox(ctx context.Context, st scheduler.MessageStatus, limit int) ([]scheduler.Message, error) {
	return s.store.Outbox(ctx, st, limit)
}

func (s statusSource) Pauses(ctx context.Context) (map[string]status.Pause, error) {
	ps, err := s.ctl.Paused(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]status.Pause, len(ps))
	for job, p := range ps {
		out[job] = status.Pause{By: p.By, At: p.At}
	}
	return out, nil
}

// consoleControl carries out the console's actions through the control state the command
// line's pause, resume and trigger change, recorded the same way, on the jobs of the table the
// command line checks them against: the leader's.
type consoleControl struct {
	ctl   controlState
	table func(ctx context.Context) view.Table
}

func (c consoleControl) Check(ctx context.Context, job string) error {
	return c.table(ctx).Check(job)
}

func (c consoleControl) Pause(ctx context.Context, job, by string) (bool, error) {
	return c.ctl.Pause(ctx, job, by)
}

func (c consoleControl) Resume(ctx context.Context, job string) (bool, error) {
	return c.ctl.Resume(ctx, job)
}

func (c consoleControl) Trigger(ctx context.Context, job, by string, at time.Time) (time.Time, error) {
	r, err := c.ctl.Trigger(ctx, job, by, at)
	return r.At, err
}

// statusConfig is the configuration of d's status server: the status, and the web console,
// whose actions are offered while an admin token is configured (a reload may add, change or
// remove it).
func (d *daemon) statusConfig() status.Config {
	return status.Config{Addr: d.cfg.HTTP.Addr, Explain: explainFor(d.cfg), Console: d.statusSource(), Node: d.cfg.Node, RunOutput: d.live,
		AdminToken: d.cfg.HTTP.AdminToken, Control: consoleControl{ctl: d.control, table: d.clusterTable}}
}

// consoleSlots returns the next slots of sched as the console shows them.
func consoleSlots(sched *schedule.Schedule) func(now time.Time, n int) []status.Slot {
	return func(now time.Time, n int) []status.Slot {
		slots := sched.Slots(now, n)
		out := make([]status.Slot, len(slots))
		for i, sl := range slots {
			out[i] = status.Slot{At: sl.At, Nominal: sl.Nominal.String(), Adjusted: sl.Adjusted}
		}
		return out
	}
}
