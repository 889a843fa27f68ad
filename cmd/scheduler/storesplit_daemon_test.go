package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler"
	"scheduler/internal/testenv"
)

// splitReplica writes the configuration of a replica of the election on e whose store is dsn
// and schema (dsn empty: SQLite in a data_dir of its own, single_node), migrates its store, and
// returns it as a cluster of its own, so that its commands read its store.
func splitReplica(t *testing.T, e *testenv.Etcd, dsn, schema string) *cluster {
	t.Helper()
	c := &cluster{t: t, etcd: e, dsn: dsn, replicas: map[string]*replica{}}
	c.path = filepath.Join(t.TempDir(), "scheduler.yaml")
	body := fmt.Sprintf(`
single_node: %t
data_dir: %s
etcd: {endpoints: [%s]}
election: {prefix: /test/election, ttl: 2s}
store: {dsn: %q, schema: %s}
http: {addr: "127.0.0.1:0"}
log: {level: debug}
shutdown_grace: 2s
%s`, dsn == "", t.TempDir(), strings.Join(e.Endpoints(), ", "), dsn, schema, testJobs)
	if err := os.WriteFile(c.path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c.cli("migrate")
	return c
}

// TestDaemon_StoreSplit runs two replicas of one election on a real etcd whose stores differ by
// mistake: two schemas of one Postgres database, two databases, two per-host SQLite files. The
// replica of the deployment's store leads; the other says why it does not (/readyz 503 and its
// /status naming both stores and the remedy, `status` warning of the split), does not campaign
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
			ca.start("a")
			ca.wait("a to lead and run tick", func() bool {
				l := ca.status().Leader
				return l != nil && l.Node == "a" && countStatus(ca.history("tick"), scheduler.StatusSucceeded) >= 1
			})
			cb.start("b")
			var addr string
			ca.wait("b to register", func() bool {
				for _, r := range ca.status().Replicas {
					if r.Node == "b" {
						addr = r.HTTPAddr
					}
				}
				return addr != ""
			})
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
			cb.wait("b to lead on its own store once the record is gone", func() bool {
				l := cb.status().Leader
				return l != nil && l.Node == "b" && countStatus(cb.history("tick"), scheduler.StatusSucceeded) >= 1
			})
		})
	}
}
