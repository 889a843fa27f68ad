package config

import (
	"slices"
	"testing"
	"time"
)

func TestRestartKeys(t *testing.T) {
	base := func() *Config {
		return &Config{Node: "a", Etcd: EtcdConfig{Endpoints: []string{"127.0.0.1:2379"}}, HTTP: HTTPConfig{Addr: "127.0.0.1:8080"},
			History: HistoryConfig{JobHistory: JobHistory{MaxRuns: 10}, PruneBatch: 500}, Jobs: []Job{{Name: "j"}}}
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"Unchanged", func(*Config) {}, nil},
		{"TableOnly", func(c *Config) {
			c.Jobs = append(c.Jobs, Job{Name: "k"})
			c.Defaults.Retries = 2
			c.History.MaxRuns, c.History.MaxAge = 5, time.Hour
			c.Metrics.PerJob = "off"
		}, nil},
		{"Nested", func(c *Config) {
			c.Etcd.Endpoints = []string{"127.0.0.1:2380"}
			c.Etcd.TLS.CAFile = "ca.pem"
			c.Store.DSN = "postgres://db"
			c.HTTP.Addr = ""
		}, []string{"etcd.endpoints", "etcd.tls.ca_file", "http.addr", "store.dsn"}},
		{"TopLevel", func(c *Config) {
			c.Node, c.ShutdownGrace, c.History.PruneBatch, c.Log.Level = "b", time.Minute, 10, "warn"
		}, []string{"history.prune_batch", "log.level", "node", "shutdown_grace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.edit(c)
			if got := base().RestartKeys(c); !slices.Equal(got, tc.want) {
				t.Fatalf("RestartKeys=%q, want %q", got, tc.want)
			}
		})
	}
}
