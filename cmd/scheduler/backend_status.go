package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"scheduler/internal/control"
	"scheduler/internal/fence"
	"scheduler/internal/pglease"
	"scheduler/internal/redislock"
	"scheduler/internal/zkelection"
)

// errNoLeader is a leaderSource's answer when nobody leads.
var errNoLeader = errors.New("no leader")

// leaderSource says where status reads who leads. With the etcd backend it reads the election
// keys (and checks them for keys that block the election); with the others it asks read, which
// is the daemon's observer or, for a command, one read from the backend.
type leaderSource struct {
	etcd    *clientv3.Client // etcd backend
	prefix  string           // etcd backend
	backend string
	read    func(ctx context.Context) (leaderSeen, error) // other backends; errNoLeader when none leads
}

// where names the place the control state is read from, for warnings.
func (s leaderSource) where() string {
	if s.etcd != nil {
		return "etcd"
	}
	return "the store"
}

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
func readOnce(cfg *Config, conns backendConns) func(context.Context) (leaderSeen, error) {
	return func(ctx context.Context) (leaderSeen, error) {
		switch cfg.Election.Backend {
		case backendPostgres:
			l, err := pglease.ReadLeader(ctx, conns.pool, cfg.Store.Schema, leaseName)
			if errors.Is(err, pglease.ErrNoLeader) {
				return leaderSeen{}, errNoLeader
			}
			return leaderSeen{Node: l.Node, Token: l.Token, Since: l.Since}, err
		case backendRedis:
			l, err := redislock.ReadLeader(ctx, conns.redis, cfg.Redis.Key)
			if errors.Is(err, redislock.ErrNoLeader) {
				return leaderSeen{}, errNoLeader
			}
			return leaderSeen{Node: l.Node, Token: l.Token}, err
		case backendZooKeeper:
			return readZooKeeper(ctx, cfg.ZooKeeper)
		}
		return leaderSeen{}, fmt.Errorf("election.backend %q: unknown", cfg.Election.Backend)
	}
}

// readZooKeeper reads the lowest candidate on a session that lives as long as the read.
func readZooKeeper(ctx context.Context, z ZooKeeperConfig) (leaderSeen, error) {
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

// collectRest is collectStatus for a backend other than etcd: the leader from src, the rest as
// for etcd.
func collectRest(ctx context.Context, doc statusDoc, table []Job, src leaderSource, ctl controlState, store *fence.Store, fences map[string]int64, now time.Time) statusDoc {
	warn := func(format string, args ...any) { doc.Warnings = append(doc.Warnings, fmt.Sprintf(format, args...)) }
	l, err := src.read(ctx)
	switch {
	case errors.Is(err, errNoLeader):
		warn("no replica leads: no job runs until one is elected")
	case err != nil:
		warn("read the leader from %s: %v", src.backend, err)
	default:
		doc.Leader = &leaderDoc{Node: l.Node, Token: l.Token}
		if !l.Since.IsZero() {
			since := l.Since.UTC()
			doc.Leader.Since = &since
		}
	}
	if rs, err := ctl.Replicas(ctx); err != nil {
		warn("read the replicas from %s: %v", src.where(), err)
	} else {
		doc.Replicas = rs
		if groups := control.HashGroups(rs); len(groups) > 1 {
			var parts []string
			for hash, nodes := range groups {
				parts = append(parts, fmt.Sprintf("%s: %s", hash, strings.Join(nodes, ",")))
			}
			sort.Strings(parts)
			warn("replicas run different job tables (%s); deploy the same configuration everywhere", strings.Join(parts, "; "))
		}
	}
	return collectJobs(ctx, doc, table, ctl, store, fences, now)
}

// leaderSource is where the daemon's /status reads the leader: etcd's keys, or its observer.
func (d *daemon) leaderSource() leaderSource {
	return leaderSource{etcd: d.cli, prefix: d.cfg.Election.Prefix, backend: d.cfg.Election.Backend, read: observed(d.observer)}
}

// leaderSource is where a command's status reads the leader.
func (s *session) leaderSource() leaderSource {
	return leaderSource{etcd: s.cli, prefix: s.cfg.Election.Prefix, backend: s.cfg.Election.Backend, read: readOnce(s.cfg, s.conns)}
}

// connectBackend opens a command's connections for a backend other than etcd: its control state
// lives in the store.
func connectBackend(ctx context.Context, cfg *Config, lg *zap.Logger, withStore bool) (*session, error) {
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
