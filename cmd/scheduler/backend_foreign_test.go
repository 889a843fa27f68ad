package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/testenv"
)

// TestDaemon_BackendForeignHolder: on each backend other than etcd, a hold of the election that
// no replica took (a lease row written by hand with an expiry far ahead, a lock set by hand with
// a long TTL, an ephemeral candidate node of another client's session) keeps every replica from
// leading. It cannot be told from a replica's hold by its shape, so it is not removed; status,
// /status and /readyz say that the election is held by no replica, naming the hold and the
// command that ends it, and once it is ended the replica leads again.
func TestDaemon_BackendForeignHolder(t *testing.T) {
	type outsider struct {
		section func(t *testing.T) string
		// hold takes the election from the leader as an outsider; end ends that hold as the
		// remedy says, and remedy is the remedy's words.
		hold   func(t *testing.T, ctx context.Context, c *cluster)
		end    func(t *testing.T, ctx context.Context, c *cluster)
		remedy string
	}
	var (
		rdb     *redis.Client
		zkAddr  string
		foreign *zk.Conn
	)
	backends := map[string]outsider{
		config.BackendPostgres: {
			section: func(*testing.T) string { return "" },
			hold: func(t *testing.T, ctx context.Context, c *cluster) {
				pgExec(t, ctx, c.dsn, `UPDATE scheduler.leader_lease SET node = 'intruder', holder = 'outsider', expires_at = 'infinity'`)
			},
			end: func(t *testing.T, ctx context.Context, c *cluster) {
				pgExec(t, ctx, c.dsn, `UPDATE "scheduler".leader_lease SET holder = NULL WHERE name = 'scheduler'`)
			},
			remedy: `UPDATE "scheduler".leader_lease SET holder = NULL WHERE name = 'scheduler'`,
		},
		config.BackendRedis: {
			section: func(t *testing.T) string {
				srv := testenv.MustRedis(t)
				rdb = redis.NewClient(&redis.Options{Addr: srv.Addr()})
				t.Cleanup(func() { _ = rdb.Close() })
				return fmt.Sprintf("redis: {addr: %s, key: 'test:leader'}", srv.Addr())
			},
			hold: func(t *testing.T, ctx context.Context, c *cluster) {
				if err := rdb.Set(ctx, "test:leader", "999 outsider intruder", 24*time.Hour).Err(); err != nil {
					t.Fatal(err)
				}
			},
			end: func(t *testing.T, ctx context.Context, c *cluster) {
				if err := rdb.Del(ctx, "test:leader").Err(); err != nil {
					t.Fatal(err)
				}
			},
			remedy: "redis-cli DEL test:leader",
		},
		config.BackendZooKeeper: {
			section: func(t *testing.T) string {
				zkAddr = testenv.MustZooKeeper(t).Addr()
				return fmt.Sprintf("zookeeper: {servers: [%s], session_timeout: 2s, path: /test/election}", zkAddr)
			},
			hold: func(t *testing.T, ctx context.Context, c *cluster) {
				var err error
				if foreign, _, err = zk.Connect([]string{zkAddr}, 4*time.Second); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(foreign.Close)
				if _, err := foreign.CreateProtectedEphemeralSequential("/test/election/c-", []byte("intruder"), zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatal(err)
				}
				// The leader's node deleted: its next node stands behind the outsider's.
				children, _, err := foreign.Children("/test/election")
				if err != nil {
					t.Fatal(err)
				}
				for _, ch := range children {
					data, _, err := foreign.Get("/test/election/" + ch)
					if err == nil && string(data) == "a" {
						if err := foreign.Delete("/test/election/"+ch, -1); err != nil {
							t.Fatal(err)
						}
					}
				}
			},
			end:    func(*testing.T, context.Context, *cluster) { foreign.Close() },
			remedy: "zkCli.sh delete /test/election/",
		},
	}
	for _, backend := range []string{config.BackendPostgres, config.BackendRedis, config.BackendZooKeeper} {
		t.Run(backend, func(t *testing.T) {
			o := backends[backend]
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := newBackendCluster(t, backend, o.section(t))
			c.start("a")
			addr, first := c.leading()
			o.hold(t, ctx, c)
			c.wait("readyz to fail naming the outsider's hold and its remedy", func() bool {
				code, body := httpGet(t, "http://"+addr+"/readyz")
				return code == 503 && strings.Contains(body, "names no running replica") && strings.Contains(body, o.remedy)
			})
			if out := c.cli("status"); !strings.Contains(out, "names no running replica") || !strings.Contains(out, o.remedy) {
				t.Fatalf("status does not say that no replica holds the election:\n%s", out)
			}
			if _, body := httpGet(t, "http://"+addr+"/status"); !strings.Contains(body, "names no running replica") {
				t.Fatalf("/status does not say that no replica holds the election:\n%.1000s", body)
			}
			o.end(t, ctx, c)
			c.wait("a to lead again with a new token", func() bool {
				doc := c.status()
				return doc.Leader != nil && doc.Leader.Node == "a" && doc.Leader.Token > first.Token
			})
			c.wait("readyz to answer 200", func() bool {
				code, _ := httpGet(t, "http://"+addr+"/readyz")
				return code == 200
			})
		})
	}
}

// pgExec runs q on the database at dsn.
func pgExec(t *testing.T, ctx context.Context, dsn, q string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
