package main

import (
	"context"
	"time"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/control"
)

// controlState is the operations state the daemon and the commands read and change: pauses,
// trigger requests and the replica registry. The etcd backend keeps it in etcd
// (*control.Store); the others, which all need a shared PostgreSQL store, keep it in the
// store (*control.Postgres).
type controlState interface {
	Pause(ctx context.Context, job, by string) (bool, error)
	Resume(ctx context.Context, job string) (bool, error)
	Paused(ctx context.Context) (map[string]control.PauseInfo, error)
	Trigger(ctx context.Context, job, by string, at time.Time) (control.Request, error)
	Requests(ctx context.Context) ([]control.Request, error)
	Done(ctx context.Context, r control.Request) error
	Replicas(ctx context.Context) ([]scheduler.Replica, error)
}

// controlWatch follows the operations state for the leader: *control.Watcher on etcd,
// *control.Poller on the store.
type controlWatch interface {
	Run(ctx context.Context) error
	Paused(job string) bool
	Ready() <-chan struct{}
	Requests() <-chan control.Request
}

var (
	_ controlState = (*control.Store)(nil)
	_ controlState = (*control.Postgres)(nil)
	_ controlWatch = (*control.Watcher)(nil)
	_ controlWatch = (*control.Poller)(nil)
)

// controlPoll is how often the store's operations state is read: pausing and triggering are an
// operator's actions, for which a second is no delay.
const controlPoll = time.Second

// registration keeps this replica's entry in the registry while its Run runs:
// *control.Registration on etcd, *control.PostgresRegistration in the store. Republish
// publishes the entry again at once, after a reload changed the table hash.
type registration interface {
	Run(ctx context.Context) error
	Republish()
	Published() <-chan struct{}
}

var (
	_ registration = (*control.Registration)(nil)
	_ registration = (*control.PostgresRegistration)(nil)
)

// buildControl builds the operations state and the registration of the configured backend.
func (d *daemon) buildControl() error {
	lg := d.lg.Named("control")
	if d.cli != nil {
		s, err := control.New(d.cli, d.cfg.Election.Prefix)
		if err != nil {
			return err
		}
		d.control, d.watcher = s, s.NewWatcher(lg).KnownJobs(d.isJob)
		d.reg, err = s.NewRegistration(d.cfg.Election.TTL, d.replica, lg)
		return err
	}
	s, err := control.NewPostgres(d.conns.Pool, d.cfg.Store.Schema)
	if err != nil {
		return err
	}
	d.control, d.watcher = s, s.NewPoller(controlPoll, d.lg)
	d.reg, err = s.NewRegistration(d.cfg.Election.TTL, d.replica, lg)
	return err
}

// isJob reports whether the table runs job, for the watcher's word on a pause key. It reads the
// names without d.mu: the watcher asks under its own lock, which the runner's loop takes to read
// a pause while a reload holds d.mu waiting for that loop.
func (d *daemon) isJob(job string) bool {
	names := d.names.Load()
	return names != nil && (*names)[job]
}

// setNames records the names of jobs for isJob.
func (d *daemon) setNames(jobs []config.Job) {
	names := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		names[j.Name] = true
	}
	d.names.Store(&names)
}

// campaign runs the election once this replica is registered, or a TTL has passed: a hold of
// the election that names no registered replica is reported as a stranger's (an error line,
// /readyz 503).
func (d *daemon) campaign(ctx context.Context) error {
	select {
	case <-d.reg.Published():
	case <-time.After(d.cfg.Election.TTL):
	case <-ctx.Done():
		return nil
	}
	return d.camp.Run(ctx, d.lead)
}
