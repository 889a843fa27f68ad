package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

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
	Replicas(ctx context.Context) ([]control.Replica, error)
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
		d.control, d.watcher = s, s.NewWatcher(lg)
		d.reg, err = s.NewRegistration(d.cfg.Election.TTL, d.replica, lg)
		return err
	}
	s, err := control.NewPostgres(d.conns.pool, d.cfg.Store.Schema)
	if err != nil {
		return err
	}
	d.control, d.watcher = s, s.NewPoller(controlPoll, d.lg)
	d.reg, err = s.NewRegistration(d.cfg.Election.TTL, d.replica, lg)
	return err
}

// backendConns are the connections of the backends other than etcd.
type backendConns struct {
	pool  *pgxpool.Pool         // the store's database: lease, floor, operations state
	redis redis.UniversalClient // redis only
}

// openBackendConns opens the connections cfg's backend needs beside the store.
func openBackendConns(ctx context.Context, cfg *config.Config) (backendConns, error) {
	var c backendConns
	pc, err := pgxpool.ParseConfig(cfg.Store.DSN)
	if err != nil {
		return c, fmt.Errorf("store.dsn: not a valid PostgreSQL connection string")
	}
	// The lease's renewals must not queue behind job writes: a pool of their own, small.
	pc.MaxConns = 4
	if c.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return c, fmt.Errorf("connect to the store for election.backend %s: %w", cfg.Election.Backend, err)
	}
	if cfg.Election.Backend == config.BackendRedis {
		// Short timeouts, so that a request to a stalled server fails within a renewal.
		timeout := max(cfg.Election.TTL/5, 200*time.Millisecond)
		c.redis = redis.NewClient(&redis.Options{
			Addr: cfg.Redis.Addr, Password: cfg.Redis.Password, DB: cfg.Redis.DB,
			DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, MaxRetries: -1, ContextTimeoutEnabled: true,
		})
	}
	return c, nil
}

// close closes what openBackendConns opened.
func (c backendConns) close() {
	if c.redis != nil {
		_ = c.redis.Close()
	}
	if c.pool != nil {
		c.pool.Close()
	}
}
