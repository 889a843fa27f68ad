package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/coord"
)

// TestStatusSource_BackendElection checks the leader status reads from a backend other than
// etcd: none when nobody leads, the read's error when it fails, and a since only when the
// backend knows it.
func TestStatusSource_BackendElection(t *testing.T) {
	ctx := context.Background()
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	read := func(l coord.Seen, err error) statusSource {
		return statusSource{leader: func(context.Context) (coord.Seen, error) { return l, err }}
	}

	e, err := read(coord.Seen{}, coord.ErrNoLeader).Election(ctx, nil)
	if err != nil || e.Leader != nil || e.Problems != nil || e.Leaseless != nil {
		t.Fatalf("nobody leads: %+v, %v; want no leader and no error", e, err)
	}
	down := errors.New("down")
	if _, err := read(coord.Seen{}, down).Election(ctx, nil); !errors.Is(err, down) {
		t.Fatalf("failed read: %v, want %v", err, down)
	}
	e, err = read(coord.Seen{Node: "b", Token: 9, Since: since}, nil).Election(ctx, nil)
	if err != nil || e.Leader == nil || e.Leader.Node != "b" || e.Leader.Token != 9 || e.Leader.Since == nil || !e.Leader.Since.Equal(since) || e.Leader.Since.Location() != time.UTC {
		t.Fatalf("leader with since: %+v, %v; want b, token 9, since %s in UTC", e.Leader, err, since)
	}
	e, err = read(coord.Seen{Node: "c", Token: 3}, nil).Election(ctx, nil)
	if err != nil || e.Leader == nil || e.Leader.Since != nil {
		t.Fatalf("leader without since: %+v, %v; want since unknown", e.Leader, err)
	}
}

func TestExplainFor(t *testing.T) {
	for backend, want := range map[string][2]string{
		config.BackendEtcd:      {"", ""},
		config.BackendPostgres:  {"postgres", "the store"},
		config.BackendZooKeeper: {"zookeeper", "the store"},
		config.BackendRedis:     {"redis", "the store"},
	} {
		ex := explainFor(&config.Config{Election: config.ElectionConfig{Backend: backend}})
		if ex.Election != want[0] || ex.Control != want[1] || ex.Blocked == nil || ex.Held == nil {
			t.Errorf("%s: election %q control %q, want %q %q and both explanations", backend, ex.Election, ex.Control, want[0], want[1])
		}
	}
}

// TestUsesDataDir checks that only the etcd backend starts an embedded etcd in data_dir: the
// others need a shared Postgres store and keep nothing there.
func TestUsesDataDir(t *testing.T) {
	for _, tc := range []struct {
		name      string
		backend   string
		endpoints []string
		dsn       string
		want      bool
	}{
		{"EmbeddedEtcd", config.BackendEtcd, nil, "postgres://db/app", true},
		{"ExternalEtcdSharedStore", config.BackendEtcd, []string{"etcd1:2379"}, "postgres://db/app", false},
		{"SQLite", config.BackendEtcd, []string{"etcd1:2379"}, "", true},
		{"Postgres", config.BackendPostgres, nil, "postgres://db/app", false},
		{"ZooKeeper", config.BackendZooKeeper, nil, "postgres://db/app", false},
		{"Redis", config.BackendRedis, nil, "postgres://db/app", false},
	} {
		cfg := &config.Config{Election: config.ElectionConfig{Backend: tc.backend}, Etcd: config.EtcdConfig{Endpoints: tc.endpoints}, Store: config.StoreConfig{DSN: tc.dsn}}
		if got := usesDataDir(cfg); got != tc.want {
			t.Errorf("%s: usesDataDir=%v, want %v", tc.name, got, tc.want)
		}
	}
}
