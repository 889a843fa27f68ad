package coord

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/fence"
)

// Conns are the connections of the backends other than etcd.
type Conns struct {
	Pool  *pgxpool.Pool         // the store's database: lease, floor, operations state
	Redis redis.UniversalClient // redis only
}

// Open opens the connections cfg's backend needs beside the store.
func Open(ctx context.Context, cfg *config.Config) (Conns, error) {
	var c Conns
	pc, err := pgxpool.ParseConfig(cfg.Store.DSN)
	if err != nil {
		return c, fmt.Errorf("store.dsn: not a valid PostgreSQL connection string")
	}
	// The lease's renewals must not queue behind job writes: a pool of their own, small.
	pc.MaxConns = 4
	bind := fence.ResetOnReadOnly(pc) // the lease's renewals write
	if c.Pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return c, fmt.Errorf("connect to the store for election.backend %s: %w", cfg.Election.Backend, err)
	}
	bind(c.Pool)
	if cfg.Election.Backend == config.BackendRedis {
		// Short timeouts, so that a request to a stalled server fails within a renewal.
		timeout := max(cfg.Election.TTL/5, 200*time.Millisecond)
		c.Redis = redis.NewClient(&redis.Options{
			Addr: cfg.Redis.Addr, Password: cfg.Redis.Password, DB: cfg.Redis.DB,
			DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, MaxRetries: -1, ContextTimeoutEnabled: true,
		})
	}
	return c, nil
}

// Close closes what Open opened.
func (c Conns) Close() {
	if c.Redis != nil {
		_ = c.Redis.Close()
	}
	if c.Pool != nil {
		c.Pool.Close()
	}
}
