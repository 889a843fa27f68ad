package main

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/coord"
)

// TestNewBackend_RefusesWhatItCannotRun checks that a backend the daemon cannot build is
// refused at build, naming the backend, before anything campaigns.
func TestNewBackend_RefusesWhatItCannotRun(t *testing.T) {
	m, err := newMetrics(&config.Config{Metrics: config.MetricsConfig{PerJob: "auto"}})
	if err != nil {
		t.Fatal(err)
	}
	lg := zaptest.NewLogger(t)
	cases := map[string]*config.Config{
		"postgres without a pool": {Node: "a", Election: config.ElectionConfig{Backend: config.BackendPostgres, TTL: 2 * time.Second}, Store: config.StoreConfig{Schema: "s"}},
		"zookeeper without servers": {Node: "a", Election: config.ElectionConfig{Backend: config.BackendZooKeeper},
			ZooKeeper: config.ZooKeeperConfig{SessionTimeout: 2 * time.Second, Path: "/e"}},
		"redis without a client": {Node: "a", Election: config.ElectionConfig{Backend: config.BackendRedis, TTL: 2 * time.Second}, Redis: config.RedisConfig{Key: "k"}},
		"an unknown backend":     {Node: "a", Election: config.ElectionConfig{Backend: "consul"}},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := coord.New(cfg, coord.Deps{Logger: lg, Metrics: m})
			if err == nil || !strings.Contains(err.Error(), "election.backend") {
				t.Fatalf("newBackend = %v, want an error naming election.backend", err)
			}
		})
	}
}
