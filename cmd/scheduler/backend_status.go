package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/control"
	"scheduler/internal/pglease"
	"scheduler/internal/redislock"
	"scheduler/internal/zkelection"
)

// errNoLeader is a statusSource's leader read's answer when nobody leads.
var errNoLeader = errors.New("no leader")

// observed reads the leader from a running observer.
func observed(v leaderView) func(context.Context) (leaderSeen, error) {
	return func(context.Context) (leaderSeen, error) {
		l, ok := v.Current()
		if !ok {
			return leaderSeen{}, errNoLeader
		}
		return l, nil
	}
}

// readOnce reads the leader from the backend once, for the commands: postgres and redis read
// the lease, zookeeper the lowest candidate node on a session of its own.
func readOnce(cfg *config.Config, conns backendConns) func(context.Context) (leaderSeen, error) {
	return func(ctx context.Context) (leaderSeen, error) {
		switch cfg.Election.Backend {
		case config.BackendPostgres:
			l, err := pglease.ReadLeader(ctx, conns.pool, cfg.Store.Schema, leaseName)
			if errors.Is(err, pglease.ErrNoLeader) {
				return leaderSeen{}, errNoLeader
			}
			return leaderSeen{Node: l.Node, Token: l.Token, Since: l.Since}, err
		case config.BackendRedis:
			l, err := redislock.ReadLeader(ctx, conns.redis, cfg.Redis.Key)
			if errors.Is(err, redislock.ErrNoLeader) {
				return leaderSeen{}, errNoLeader
			}
			return leaderSeen{Node: l.Node, Token: l.Token}, err
		case config.BackendZooKeeper:
			return readZooKeeper(ctx, cfg.ZooKeeper)
		}
		return leaderSeen{}, fmt.Errorf("election.backend %q: unknown", cfg.Election.Backend)
	}
}

// readZooKeeper reads the lowest candidate on a session that lives as long as the read.
func readZooKeeper(ctx context.Context, z config.ZooKeeperConfig) (leaderSeen, error) {
	conn, _, err := zk.Connect(z.Servers, z.SessionTimeout, zk.WithLogger(zkQuiet{}))
	if err != nil {
		return leaderSeen{}, fmt.Errorf("connect to %v: %w", z.Servers, err)
	}
	// The client's calls take no context: closing the session ends them.
	stop := context.AfterFunc(ctx, conn.Close)
	defer func() {
		stop()
		conn.Close()
	}()
	l, err := zkelection.ReadLeader(conn, z.Path)
	if errors.Is(err, zkelection.ErrNoLeader) {
		return leaderSeen{}, errNoLeader
	}
	return leaderSeen{Node: l.Node, Token: l.Token}, err // see leaderSeen.Since
}

// zkQuiet drops the ZooKeeper client's own log lines: a command reports its errors itself.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// statusSource is what the daemon's /status and /readyz read: etcd's keys, or its observer and
// the store.
func (d *daemon) statusSource() statusSource {
	src := statusSource{cli: d.cli, prefix: d.cfg.Election.Prefix, ctl: d.control, store: d.store}
	if d.cli == nil {
		src.leader = observed(d.observer)
	}
	return src
}

// statusSource is what a command's status reads: etcd's keys, or one read of the backend and
// the store.
func (s *session) statusSource() statusSource {
	src := statusSource{cli: s.cli, prefix: s.cfg.Election.Prefix, ctl: s.ctl, store: s.store}
	if s.cli == nil {
		src.leader = readOnce(s.cfg, s.conns)
	}
	return src
}

// connectBackend opens a command's connections for a backend other than etcd: its control state
// lives in the store.
func connectBackend(ctx context.Context, cfg *config.Config, lg *zap.Logger, withStore bool) (*session, error) {
	conns, err := openBackendConns(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &session{cfg: cfg, conns: conns, close: conns.close}
	if s.ctl, err = control.NewPostgres(conns.pool, cfg.Store.Schema); err != nil {
		s.close()
		return nil, err
	}
	if withStore {
		if s.store, err = openStore(ctx, cfg, lg); err != nil {
			s.close()
			return nil, err
		}
		s.close = func() { s.store.Close(); conns.close() }
	}
	return s, nil
}
