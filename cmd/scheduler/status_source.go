package main

import (
	"context"
	"time"

	"scheduler"

	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/coord"
	"scheduler/cmd/scheduler/internal/logs"
	"scheduler/internal/control"
	"scheduler/internal/election"
	"scheduler/internal/fence"
	"scheduler/internal/jobs"
	"scheduler/internal/status"
)

// statusSource is what `status` and /status read. With the etcd backend: the election and the
// control keys in etcd. With another: the leader from leader (the daemon's observer, or one read
// of the backend for a command) and the control state in the store. Either way, the fences and
// the runs in the store.
type statusSource struct {
	cli      *clientv3.Client                          // etcd backend
	prefix   string                                    // etcd backend
	leader   func(context.Context) (coord.Seen, error) // other backends; coord.ErrNoLeader when none leads
	ctl      controlState
	store    *fence.Store
	problems func() []string // the daemon's: what keeps its coordinator from working (coord.Problems)
}

var _ status.Source = statusSource{}

// explainFor words a blocked job as the runner logs it, and names where cfg's backend keeps
// the leader and the control state.
func explainFor(cfg *config.Config) status.Explain {
	ex := status.Explain{Blocked: jobs.BlockReason, Held: jobs.HeldReason}
	if cfg.Election.Backend != config.BackendEtcd {
		ex.Election, ex.Control = cfg.Election.Backend, "the store"
	}
	return ex
}

func (s statusSource) Election(ctx context.Context, replicas []scheduler.Replica) (status.Election, error) {
	e, err := s.election(ctx, replicas)
	if s.problems != nil {
		e.Problems = append(e.Problems, s.problems()...)
	}
	return e, err
}

func (s statusSource) election(ctx context.Context, replicas []scheduler.Replica) (status.Election, error) {
	if s.cli == nil {
		return coord.Election(ctx, s.leader, replicas)
	}
	snap, err := election.ReadSnapshot(ctx, s.cli, s.prefix)
	if err != nil {
		return status.Election{}, err
	}
	var nodes []string
	if replicas != nil {
		nodes = make([]string, len(replicas))
		for i, r := range replicas {
			nodes[i] = r.Node
		}
	}
	e := status.Election{Leaseless: make([]status.LeaselessKey, len(snap.Leaseless)), Problems: snap.Problems(nodes)}
	if st, ok := s.ctl.(*control.Store); ok { // a failed read is the replicas' to report
		_, e.Strays, _ = st.Registry(ctx)
	}
	for i, c := range snap.Leaseless {
		e.Leaseless[i] = status.LeaselessKey{Key: c.Key, Value: election.ShownValue(c.Node), CreateRevision: c.Rev, Remove: election.RemoveCommand(c.Key)}
	}
	if snap.Leads {
		e.Leader = &status.Leader{Node: logs.Escape(election.ShownValue(snap.Leader.Node)), Token: snap.Leader.Token} // a value anyone may write
		if !snap.Leader.Since.IsZero() {
			since := snap.Leader.Since.UTC()
			e.Leader.Since = &since
		}
	}
	return e, nil
}

func (s statusSource) Replicas(ctx context.Context) ([]scheduler.Replica, error) {
	return s.ctl.Replicas(ctx)
}

func (s statusSource) Paused(ctx context.Context) (map[string]bool, error) {
	ps, err := s.ctl.Paused(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(ps))
	for job := range ps {
		out[job] = true
	}
	return out, nil
}

func (s statusSource) Fences(ctx context.Context, jobs ...string) (map[string]int64, error) {
	return s.store.Fences(ctx, jobs...)
}

func (s statusSource) Last(ctx context.Context, jobs ...string) (map[string]scheduler.Run, error) {
	return s.store.Last(ctx, jobs...)
}

// statusEntries returns the table js as the status shows it, each job with its digest.
func statusEntries(js []config.Job, digest func(config.Job) string) []status.Entry {
	out := make([]status.Entry, len(js))
	for i, j := range js {
		out[i] = status.Entry{Name: j.Name, Schedule: j.Schedule, Timezone: j.Timezone, Enabled: j.Enabled, Digest: digest(j)}
		if sched := j.ParsedSchedule(); sched != nil {
			out[i].Next = func(now time.Time) time.Time { return sched.Next(now).At }
			out[i].Words, out[i].Slots = sched.Describe(), consoleSlots(sched)
		}
	}
	return out
}

// statusView is what the daemon shows on /status and /readyz.
type statusView struct{ d *daemon }

var _ status.Daemon = statusView{}

func (v statusView) Table() []status.Entry {
	table, hash := v.d.table()
	digests := v.d.digests.of(table, hash)
	return statusEntries(table, func(j config.Job) string { return digests[j.Name] })
}

func (v statusView) Blocked() []string {
	bs := v.d.runner.Blocked()
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Reason
	}
	if r := v.d.outbox.Blocked(); r != "" {
		out = append(out, r)
	}
	return out
}

func (v statusView) CheckSchema(ctx context.Context) error { return v.d.store.CheckSchema(ctx) }
