package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/cmd/scheduler/internal/redact"
)

const pgDSN = "store:\n  dsn: 'postgres://u@db/sched'\n"

func TestConfig_Backend(t *testing.T) {
	t.Run("Refused", func(t *testing.T) {
		cases := []struct {
			name string
			yaml string
			want []string
		}{
			{"Unknown", "election:\n  backend: consul\n", []string{"election.backend: must be one of etcd, postgres, zookeeper, redis"}},
			{"PostgresWithoutDSN", "election:\n  backend: postgres\n", []string{"election.backend: postgres needs store.dsn"}},
			{"ZooKeeperOnSQLite", "election:\n  backend: zookeeper\nzookeeper:\n  servers: [zk:2181]\n", []string{"store.dsn: is empty while election.backend is zookeeper"}},
			{"RedisOnSQLite", "election:\n  backend: redis\nredis:\n  addr: r:6379\n", []string{"store.dsn: is empty while election.backend is redis"}},
			{"SingleNodeWithShared", pgDSN + "single_node: true\nelection:\n  backend: postgres\n", []string{"single_node: applies to the etcd backend only"}},
			{"EtcdEndpointsUnused", pgDSN + "etcd:\n  endpoints: [e:2379]\nelection:\n  backend: postgres\n", []string{"etcd.endpoints: is set while election.backend is postgres"}},
			{"TTLTooShort", pgDSN + "election:\n  backend: redis\n  ttl: 500ms\nredis:\n  addr: r:6379\n", []string{"election.ttl: must be at least 1s"}},
			{"SessionTooShort", pgDSN + "election:\n  backend: zookeeper\nzookeeper:\n  servers: [zk:2181]\n  session_timeout: 800ms\n", []string{"zookeeper.session_timeout: must be at least 1s"}},
			{"NoServers", pgDSN + "election:\n  backend: zookeeper\n", []string{"zookeeper.servers: is empty"}},
			{"BadServer", pgDSN + "election:\n  backend: zookeeper\nzookeeper:\n  servers: [zk]\n", []string{"zookeeper.servers[0]: must be host:port"}},
			{"BadPath", pgDSN + "election:\n  backend: zookeeper\nzookeeper:\n  servers: [zk:2181]\n  path: sched/\n", []string{"zookeeper.path:"}},
			{"PathControlCharacter", pgDSN + "election:\n  backend: zookeeper\nzookeeper:\n  servers: [zk:2181]\n  path: \"/sched\\x01\"\n", []string{`zookeeper.path: holds U+0001, which ZooKeeper refuses in a node path, got "/sched\x01"`}},
			{"PathPrivateUse", pgDSN + "election:\n  backend: zookeeper\nzookeeper:\n  servers: [zk:2181]\n  path: \"/a/\\uf000\"\n", []string{"zookeeper.path: holds U+F000"}},
			{"NoRedisAddr", pgDSN + "election:\n  backend: redis\n", []string{"redis.addr: is empty"}},
			{"NegativeDB", pgDSN + "election:\n  backend: redis\nredis:\n  addr: r:6379\n  db: -1\n", []string{"redis.db: must not be negative"}},
			{"EmptyKey", pgDSN + "election:\n  backend: redis\nredis:\n  addr: r:6379\n  key: ''\n", []string{"redis.key: must not be empty"}},
			{"UnknownRedisKey", pgDSN + "redis:\n  address: r:6379\n", []string{"redis.address: unknown key"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				mustLoadError(t, configtest.Write(t, tc.yaml), nil, tc.want...)
			})
		}
	})

	t.Run("Accepted", func(t *testing.T) {
		cfg, err := Load(configtest.Write(t, pgDSN+"election:\n  backend: zookeeper\nzookeeper:\n  servers: [zk1:2181, zk2:2181]\n  session_timeout: 4s\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if z := cfg.ZooKeeper; len(z.Servers) != 2 || z.SessionTimeout != 4*time.Second || z.Path != "/scheduler/election" {
			t.Fatalf("zookeeper = %+v", z)
		}
		cfg, err = Load(configtest.Write(t, "jobs: []\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Election.Backend != BackendEtcd || cfg.Redis.Key != "scheduler:leader" || cfg.Redis.DB != 0 {
			t.Fatalf("defaults: election=%+v redis=%+v", cfg.Election, cfg.Redis)
		}
	})

	t.Run("RedisPasswordFile", func(t *testing.T) {
		secret := filepath.Join(t.TempDir(), "redis_password")
		if err := os.WriteFile(secret, []byte("s3cret-redis\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		env := []string{"SCHEDULER_REDIS_PASSWORD_FILE=" + secret}
		cfg, err := Load(configtest.Write(t, pgDSN+"election:\n  backend: redis\nredis:\n  addr: r:6379\n"), env)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Redis.Password != "s3cret-redis" {
			t.Fatalf("redis.password = %q, want the file's content", cfg.Redis.Password)
		}
		if scrub := redact.Scrubber(cfg.Secrets()); scrub == nil || strings.Contains(scrub("auth s3cret-redis"), "s3cret") {
			t.Fatal("the redis password is not scrubbed from the output of runs")
		}
	})
}
