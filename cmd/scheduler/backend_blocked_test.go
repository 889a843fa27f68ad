package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/testenv"
)

// TestDaemon_BackendBlockedElection: on each backend other than etcd, a state written by hand
// that no replica can lead past (an access list refusing the replicas on the ZooKeeper path, a
// Redis token counter or a lease row's token at the largest int64) is named with its remedy by
// status, /status and /readyz, and at error level in the log; once set right, readyz answers
// 200 again.
func TestDaemon_BackendBlockedElection(t *testing.T) {
	type accident struct {
		section     func(t *testing.T) string
		break_, fix func(t *testing.T, ctx context.Context, c *cluster)
		remedy      string
	}
	var (
		rdb *redis.Client
		zkc *zk.Conn
	)
	backends := map[string]accident{
		config.BackendPostgres: {
			section: func(*testing.T) string { return "" },
			break_: func(t *testing.T, ctx context.Context, c *cluster) {
				pgExec(t, ctx, c.dsn, `UPDATE scheduler.leader_lease SET token = 9223372036854775807`)
			},
			fix: func(t *testing.T, ctx context.Context, c *cluster) {
				pgExec(t, ctx, c.dsn, `UPDATE scheduler.leader_lease SET token = (SELECT max(token) FROM scheduler.job_fence)`)
			},
			remedy: "UPDATE leader_lease SET token = (SELECT max(token) FROM job_fence) WHERE name = 'scheduler'",
		},
		config.BackendRedis: {
			section: func(t *testing.T) string {
				srv := testenv.MustRedis(t)
				rdb = redis.NewClient(&redis.Options{Addr: srv.Addr()})
				t.Cleanup(func() { _ = rdb.Close() })
				return fmt.Sprintf("redis: {addr: %s, key: 'test:leader'}", srv.Addr())
			},
			break_: func(t *testing.T, ctx context.Context, c *cluster) {
				if err := rdb.Set(ctx, "test:leader:token", "9223372036854775807", 0).Err(); err != nil {
					t.Fatal(err)
				}
			},
			fix: func(t *testing.T, ctx context.Context, c *cluster) {
				if err := rdb.Set(ctx, "test:leader:token", "100", 0).Err(); err != nil {
					t.Fatal(err)
				}
			},
			remedy: "redis-cli SET test:leader:token",
		},
		config.BackendZooKeeper: {
			section: func(t *testing.T) string {
				addr := testenv.MustZooKeeper(t).Addr()
				var err error
				if zkc, _, err = zk.Connect([]string{addr}, 4*time.Second); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(zkc.Close)
				return fmt.Sprintf("zookeeper: {servers: [%s], session_timeout: 2s, path: /test/election}", addr)
			},
			break_: func(t *testing.T, ctx context.Context, c *cluster) {
				if _, err := zkc.SetACL("/test/election", zk.WorldACL(zk.PermRead|zk.PermAdmin), -1); err != nil {
					t.Fatal(err)
				}
			},
			fix: func(t *testing.T, ctx context.Context, c *cluster) {
				if _, err := zkc.SetACL("/test/election", zk.WorldACL(zk.PermAll), -1); err != nil {
					t.Fatal(err)
				}
			},
			remedy: "zkCli.sh setAcl /test/election world:anyone:cdrwa",
		},
	}
	for _, backend := range []string{config.BackendPostgres, config.BackendRedis, config.BackendZooKeeper} {
		t.Run(backend, func(t *testing.T) {
			a := backends[backend]
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := newBackendCluster(t, backend, a.section(t))
			r := c.start("a")
			addr, _ := c.leading()
			a.break_(t, ctx, c)
			c.wait("readyz to fail naming the remedy", func() bool {
				code, body := httpGet(t, "http://"+addr+"/readyz")
				return code == 503 && strings.Contains(body, a.remedy)
			})
			if out := c.cli("status"); !strings.Contains(out, a.remedy) {
				t.Fatalf("status does not name the remedy:\n%s", out)
			}
			if _, body := httpGet(t, "http://"+addr+"/status"); !strings.Contains(body, a.remedy) {
				t.Fatalf("/status does not name the remedy:\n%.1000s", body)
			}
			c.wait("an error line naming the remedy", func() bool {
				for _, line := range strings.Split(r.logs.String(), "\n") {
					if strings.Contains(line, `"level":"error"`) && strings.Contains(line, a.remedy) {
						return true
					}
				}
				return false
			})
			a.fix(t, ctx, c)
			c.wait("readyz to answer 200", func() bool {
				code, _ := httpGet(t, "http://"+addr+"/readyz")
				return code == 200
			})
		})
	}
}
