package coord

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/pglease"
	"scheduler/internal/redislock"
	"scheduler/internal/zkelection"
)

// ErrNoLeader is a leader read's answer when nobody leads.
var ErrNoLeader = errors.New("no leader")

// Observed reads the leader from a running observer.
func Observed(v View) func(context.Context) (Seen, error) {
	return func(context.Context) (Seen, error) {
		l, ok := v.Current()
		if !ok {
			return Seen{Problems: l.Problems}, ErrNoLeader
		}
		return l, nil
	}
}

// ReadOnce reads the leader from the backend once, for the commands: postgres and redis read
// the lease, zookeeper the lowest candidate node on a session of its own.
func ReadOnce(cfg *config.Config, conns Conns) func(context.Context) (Seen, error) {
	return func(ctx context.Context) (Seen, error) {
		switch cfg.Election.Backend {
		case config.BackendPostgres:
			l, err := pglease.ReadLeader(ctx, conns.Pool, cfg.Store.Schema, LeaseName)
			if errors.Is(err, pglease.ErrNoLeader) {
				return Seen{Problems: l.Problems}, ErrNoLeader
			}
			return pgSeen(l, cfg.Store.Schema, l.Problems), err
		case config.BackendRedis:
			l, err := redislock.ReadLeader(ctx, conns.Redis, cfg.Redis.Key)
			if errors.Is(err, redislock.ErrNoLeader) {
				return Seen{Problems: l.Problems}, ErrNoLeader
			}
			return redisSeen(l, cfg.Redis.Key, cfg.Redis.DB, l.Problems), err
		case config.BackendZooKeeper:
			return readZooKeeper(ctx, cfg.ZooKeeper)
		}
		return Seen{}, fmt.Errorf("election.backend %q: unknown", cfg.Election.Backend)
	}
}

// readZooKeeper reads the lowest candidate on a session that lives as long as the read.
func readZooKeeper(ctx context.Context, z config.ZooKeeperConfig) (Seen, error) {
	var e zkelection.Election
	if err := withZooKeeper(ctx, z, func(conn *zk.Conn) (err error) {
		e, err = zkelection.ReadElection(conn, z.Path)
		return err
	}); err != nil {
		return Seen{}, err
	}
	if !e.Leads {
		return Seen{Problems: e.Problems()}, ErrNoLeader
	}
	return zkSeen(e.Leader, e.Problems()), nil // see Seen.Since
}

// withZooKeeper calls fn on a session of its own that lives as long as the call.
func withZooKeeper(ctx context.Context, z config.ZooKeeperConfig, fn func(*zk.Conn) error) error {
	conn, _, err := zk.Connect(z.Servers, z.SessionTimeout, zk.WithLogger(zkQuiet{}))
	if err != nil {
		return fmt.Errorf("connect to %v: %w", z.Servers, err)
	}
	// The client's calls take no context: closing the session ends them.
	stop := context.AfterFunc(ctx, conn.Close)
	defer func() {
		stop()
		conn.Close()
	}()
	return fn(conn)
}

// zkQuiet drops the ZooKeeper client's own log lines: a command reports its errors itself.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}
