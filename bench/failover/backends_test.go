package failover

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"scheduler/internal/testenv"
)

// BenchmarkFailoverBackends is BenchmarkFailover's kill -9 and SIGTERM on each election backend
// other than etcd, at the same TTL, three replicas and the same job: a fresh database, and a
// fresh ZooKeeper (tick 200 ms) or Redis (no persistence) server per backend.
//
//	go test -run '^$' -bench FailoverBackends -benchtime 20x -timeout 60m ./bench/failover/
func BenchmarkFailoverBackends(b *testing.B) {
	bin := testenv.MustBuild(b, "scheduler/cmd/scheduler")
	pg := testenv.MustPostgres(b)
	for _, backend := range []string{"postgres", "zookeeper", "redis"} {
		b.Run(backend, func(b *testing.B) {
			var section string
			switch backend {
			case "postgres":
				section = fmt.Sprintf("election: {backend: postgres, ttl: %s}", ttl)
			case "zookeeper":
				section = fmt.Sprintf("election: {backend: zookeeper}\nzookeeper: {servers: [%s], session_timeout: %s, path: /bench/election}",
					testenv.MustZooKeeper(b).Addr(), ttl)
			case "redis":
				section = fmt.Sprintf("election: {backend: redis, ttl: %s}\nredis: {addr: %q, key: bench:leader}", ttl, testenv.MustRedis(b).Addr())
			}
			for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
				name := map[syscall.Signal]string{syscall.SIGKILL: "kill-9", syscall.SIGTERM: "sigterm"}[sig]
				b.Run(name, func(b *testing.B) {
					c := newCluster(b, bin)
					dsn := pg.CreateDatabase(b)
					names := []string{"n1", "n2", "n3"}
					configs := map[string]string{}
					for _, n := range names {
						configs[n] = c.configWith(n, section, dsn, "beat")
					}
					trials(b, c, names, configs, sig)
				})
			}
		})
	}
}

// configWith writes the configuration of replica name as config does, with section as its
// election (the backend and its keys) instead of etcd.
func (c *cluster) configWith(name, section, dsn, job string) string {
	path := c.config(name, "127.0.0.1:1", dsn, "/unused", job, ttl)
	return c.rewrite(path, func(cfg string) string {
		start := strings.Index(cfg, "etcd:\n")
		end := strings.Index(cfg, "store:\n")
		return cfg[:start] + section + "\n" + cfg[end:]
	})
}
