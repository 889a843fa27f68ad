package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler"
	"scheduler/internal/testenv"
)

// splitReplica writes the configuration of a replica of the election on e whose store is dsn
// and schema (dsn empty: SQLite in a data_dir of its own, single_node), migrates its store, and
// returns it as a cluster of its own, so that its commands read its store.
func splitReplica(t *testing.T, e *testenv.Etcd, dsn, schema string) *cluster {
	t.Helper()
	election := fmt.Sprintf("single_node: %t\netcd: {endpoints: [%s]}\nelection: {prefix: /test/election, ttl: 2s}",
		dsn == "", strings.Join(e.Endpoints(), ", "))
	c := splitReplicaOn(t, election, dsn, schema)
	c.etcd = e
	return c
}

// splitReplicaOn is splitReplica with the election configured by the YAML election.
func splitReplicaOn(t *testing.T, election, dsn, schema string) *cluster {
	t.Helper()
	c := &cluster{t: t, dsn: dsn, replicas: map[string]*replica{}}
	c.path = filepath.Join(t.TempDir(), "scheduler.yaml")
	body := fmt.Sprintf(`
data_dir: %s
%s
store: {dsn: %q, schema: %s}
http: {addr: "127.0.0.1:0"}
log: {level: debug}
shutdown_grace: 2s
%s`, t.TempDir(), election, dsn, schema, testJobs)
	if err := os.WriteFile(c.path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c.cli("migrate")
	return c
}

// waitLeads waits until node leads c's election and c's ledger has a run of tick that
// succeeded; when says at what point of the test.
func (c *cluster) waitLeads(node, when string) {
	c.t.Helper()
	c.wait(node+" to lead and run tick "+when, func() bool {
		l := c.status().Leader
		return l != nil && l.Node == node && countStatus(c.history("tick"), scheduler.StatusSucceeded) >= 1
	})
}

// startSplit starts replica a of ca until it leads, then replica b of cb, and returns b's HTTP
// address once the registry that reg reads lists it.
func startSplit(ca, cb, reg *cluster) string {
	ca.t.Helper()
	ca.start("a")
	ca.waitLeads("a", "first")
	cb.start("b")
	var addr string
	reg.wait("b to register", func() bool {
		for _, r := range reg.status().Replicas {
			if r.Node == "b" {
				addr = r.HTTPAddr
			}
		}
		return addr != ""
	})
	return addr
}

// checkStatusOf checks that `status` run with c's configuration, that of the replica of the
// other store, says that its store is not the deployment's.
func checkStatusOf(t *testing.T, c *cluster) {
	t.Helper()
	if w := strings.Join(c.status().Warnings, "\n"); !strings.Contains(w, "this configuration's store is not the deployment's store") {
		t.Errorf("status warnings with the other store's configuration %q, want that its store is not the deployment's", w)
	}
}

// TestDaemon_StoreSplit runs two replicas of one election on a real etcd whose stores differ by
// mistake: two schemas of one Postgres database, two databases, two per-host SQLite files. The
// replica of the deployment's store leads; the other says why it does not (/readyz 503 and its
// /status naming both stores and the remedy, `status` warning of the split, and with its file
// that its store is not the deployment's), does not campaign
// even once the leader is gone, and runs nothing; once the record is removed, as after a
// deliberate move, it leads on its own store.
func TestDaemon_StoreSplit(t *testing.T) {
	cases := map[string]func(t *testing.T) (dsnA, schemaA, dsnB, schemaB string){
		"PostgresSchemas": func(t *testing.T) (string, string, string, string) {
			dsn := testenv.MustDatabase(t)
			return dsn, "scheduler", dsn, "elsewhere"
		},
		"PostgresDatabases": func(t *testing.T) (string, string, string, string) {
			return testenv.MustDatabase(t), "scheduler", testenv.MustDatabase(t), "scheduler"
		},
		"SQLite": func(t *testing.T) (string, string, string, string) { return "", "scheduler", "", "scheduler" },
	}
	for name, stores := range cases {
		t.Run(name, func(t *testing.T) {
			e := testenv.MustEtcd(t)
			dsnA, schemaA, dsnB, schemaB := stores(t)
			ca, cb := splitReplica(t, e, dsnA, schemaA), splitReplica(t, e, dsnB, schemaB)
			addr := startSplit(ca, cb, ca)
			for _, path := range []string{"/readyz", "/status"} {
				var code int
				var body string
				cb.wait("b to say why it does not lead on "+path, func() bool {
					code, body = httpGet(t, "http://"+addr+path)
					return strings.Contains(body, "not the deployment's store")
				})
				if path == "/readyz" && code != 503 {
					t.Errorf("GET /readyz of b = %d, want 503:\n%s", code, body)
				}
				if !strings.Contains(body, "etcdctl del /test/election:store") || !strings.Contains(body, "recorded by a") {
					t.Errorf("GET %s of b does not name the record and its remedy:\n%.2000s", path, body)
				}
			}
			if w := strings.Join(ca.status().Warnings, "\n"); !strings.Contains(w, "replicas write to different stores") {
				t.Errorf("status warnings %q, want the store split", w)
			}
			checkStatusOf(t, cb)

			if err := ca.replicas["a"].stop(t); err != nil {
				t.Fatal(err)
			}
			cli := e.Client(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			candidates := func() int64 {
				resp, err := cli.Get(ctx, "/test/election/", clientv3.WithPrefix(), clientv3.WithCountOnly())
				if err != nil {
					t.Fatal(err)
				}
				return resp.Count
			}
			cb.wait("no candidate once a stopped", func() bool { return candidates() == 0 })
			if runs := cb.history("tick"); len(runs) != 0 {
				t.Fatalf("b ran %d slots of tick into its own ledger, want none", len(runs))
			}
			if strings.Contains(cb.replicas["b"].logs.String(), `"leading"`) {
				t.Fatalf("b led; its log:\n%s", cb.replicas["b"].logs)
			}

			if _, err := cli.Delete(ctx, "/test/election:store"); err != nil {
				t.Fatal(err)
			}
			cb.waitLeads("b", "once the record is gone")
		})
	}
}

// TestDaemon_StoreSplitBackends: the same split with the ZooKeeper and Redis backends, whose
// replicas register in their stores, two databases here: the replica of the other store says
// why it does not lead on /readyz, naming the node or key of the record and the command that
// removes it, runs nothing after the leader stopped, and leads once the record is removed.
func TestDaemon_StoreSplitBackends(t *testing.T) {
	type backend struct {
		section string
		remove  func(t *testing.T)
		remedy  string
	}
	backends := map[string]func(t *testing.T) backend{
		"zookeeper": func(t *testing.T) backend {
			addr := testenv.MustZooKeeper(t).Addr()
			return backend{
				section: fmt.Sprintf("election: {backend: zookeeper}\nzookeeper: {servers: [%s], session_timeout: 2s, path: /test/election}", addr),
				remedy:  "zkCli.sh delete /test/election:store",
				remove: func(t *testing.T) {
					conn, _, err := zk.Connect([]string{addr}, 2*time.Second, zk.WithLogger(zkSilent{}))
					if err != nil {
						t.Fatal(err)
					}
					defer conn.Close()
					if err := conn.Delete("/test/election:store", -1); err != nil {
						t.Fatal(err)
					}
				},
			}
		},
		"redis": func(t *testing.T) backend {
			addr := testenv.MustRedis(t).Addr()
			return backend{
				section: fmt.Sprintf("election: {backend: redis, ttl: 2s}\nredis: {addr: %s, key: 'test:leader'}", addr),
				remedy:  "redis-cli DEL test:leader:store",
				remove: func(t *testing.T) {
					rdb := redis.NewClient(&redis.Options{Addr: addr})
					defer rdb.Close()
					if err := rdb.Del(context.Background(), "test:leader:store").Err(); err != nil {
						t.Fatal(err)
					}
				},
			}
		},
	}
	for name, of := range backends {
		t.Run(name, func(t *testing.T) {
			b := of(t)
			ca := splitReplicaOn(t, b.section, testenv.MustDatabase(t), "scheduler")
			cb := splitReplicaOn(t, b.section, testenv.MustDatabase(t), "scheduler")
			addr := startSplit(ca, cb, cb)
			var code int
			var body string
			cb.wait("b to say why it does not lead", func() bool {
				code, body = httpGet(t, "http://"+addr+"/readyz")
				return strings.Contains(body, "not the deployment's store")
			})
			if code != 503 || !strings.Contains(body, b.remedy) {
				t.Errorf("GET /readyz of b = %d, want 503 naming %q:\n%s", code, b.remedy, body)
			}
			checkStatusOf(t, cb)
			if err := ca.replicas["a"].stop(t); err != nil {
				t.Fatal(err)
			}
			cb.wait("no leader once a stopped", func() bool { return cb.status().Leader == nil })
			if runs := cb.history("tick"); len(runs) != 0 {
				t.Fatalf("b ran %d slots of tick into its own ledger, want none", len(runs))
			}
			b.remove(t)
			cb.waitLeads("b", "once the record is gone")
		})
	}
}

// zkSilent drops the ZooKeeper client's log lines.
type zkSilent struct{}

func (zkSilent) Printf(string, ...any) {}
