package coord

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/internal/status"
	"scheduler/internal/testenv"
)

// gated is one replica's coordinator under test, running until the test ends.
type gated struct {
	c     Coordinator
	terms atomic.Int64 // terms whose lead ran
	stop  func()
}

// coordinatorOf returns the coordinator New builds for the minimal configuration with the
// variables env, on cli, for a replica of store id.
func coordinatorOf(t *testing.T, env []string, cli *clientv3.Client, id scheduler.StoreID) Coordinator {
	t.Helper()
	cfg, err := config.Load(configtest.Write(t, configtest.MinimalJob), env)
	if err != nil {
		t.Fatal(err)
	}
	m, err := status.NewMetrics(status.MetricsConfig{PerJob: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := New(cfg, Deps{Etcd: cli, Logger: zaptest.NewLogger(t), Metrics: m, Store: id})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startGated runs the etcd coordinator of node with store id on cli until stop or the end of
// the test; each term leads until its context ends.
func startGated(t *testing.T, cli *clientv3.Client, endpoints []string, node string, id scheduler.StoreID) *gated {
	t.Helper()
	env := []string{"SCHEDULER_ETCD_ENDPOINTS=" + strings.Join(endpoints, ","), "SCHEDULER_SINGLE_NODE=true",
		"SCHEDULER_NODE=" + node, "SCHEDULER_ELECTION_TTL=2s", "SCHEDULER_ELECTION_PREFIX=/gate/election"}
	g := &gated{c: coordinatorOf(t, env, cli, id)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := g.c.Run(ctx, func(ctx context.Context, _ scheduler.Term) error {
			g.terms.Add(1)
			<-ctx.Done()
			return nil
		}); err != nil {
			t.Errorf("run %s: %v", node, err)
		}
	})
	var once sync.Once
	g.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(g.stop)
	return g
}

// TestStoreGate_Etcd: on a real etcd, the first leader records its store; a replica of another
// store then neither leads nor campaigns (no candidate key of its own), also once the leader is
// gone, and says why, naming both stores and the remedy; a replica of the same store takes
// over; after the record is removed (a deliberate move), the other store's replica leads, and
// steps down once a value no replica writes replaces the record. A replica that publishes no
// identity (an older version) is not judged.
func TestStoreGate_Etcd(t *testing.T) {
	e := testenv.MustEtcd(t)
	cli := e.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	deployment := scheduler.StoreID{ID: "d1", Dialect: scheduler.Postgres, Database: "app", Schema: "scheduler", Name: "postgres db-a"}
	elsewhere := scheduler.StoreID{ID: "e1", Dialect: scheduler.Postgres, Database: "app", Schema: "elsewhere", Name: "postgres db-b"}
	candidates := func() int64 {
		resp, err := cli.Get(ctx, "/gate/election/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count
	}
	within := func(what string, cond func() bool) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, 20*time.Millisecond, what, cond)
	}

	a := startGated(t, cli, e.Endpoints(), "a", deployment)
	within("a to lead", func() bool { return a.terms.Load() == 1 })
	b := startGated(t, cli, e.Endpoints(), "b", elsewhere)
	within("b to refuse", func() bool { return b.c.StoreProblem() != "" })
	p := b.c.StoreProblem()
	for _, want := range []string{`schema "elsewhere"`, `schema "scheduler"`, "recorded by a", "etcdctl del /gate/election:store"} {
		if !strings.Contains(p, want) {
			t.Errorf("b's problem %q does not name %q", p, want)
		}
	}
	if a.c.StoreProblem() != "" {
		t.Errorf("a's problem %q, want none", a.c.StoreProblem())
	}
	a.stop()
	within("no candidate once a stopped", func() bool { return candidates() == 0 })
	c := startGated(t, cli, e.Endpoints(), "c", deployment)
	within("c, of the deployment's store, to lead", func() bool { return c.terms.Load() == 1 })
	if n := b.terms.Load(); n != 0 {
		t.Fatalf("b led %d terms, want none: its store is not the deployment's", n)
	}

	old := startGated(t, cli, e.Endpoints(), "old", scheduler.StoreID{})
	if old.c.StoreProblem() != "" {
		t.Fatalf("a replica without an identity has a problem: %q", old.c.StoreProblem())
	}
	old.stop()

	c.stop()
	if _, err := cli.Delete(ctx, "/gate/election:store"); err != nil {
		t.Fatal(err)
	}
	within("b to lead after the record was removed", func() bool { return b.terms.Load() == 1 && b.c.StoreProblem() == "" })

	if _, err := cli.Put(ctx, "/gate/election:store", "written by hand"); err != nil {
		t.Fatal(err)
	}
	within("b to step down over a record written by hand", func() bool {
		_, leads := b.c.Leading()
		p := b.c.StoreProblem()
		return !leads && strings.Contains(p, "does not parse") && strings.Contains(p, "etcdctl del /gate/election:store")
	})
}

// TestRecords_Backends: the record beside a ZooKeeper or Redis election, on real servers: the
// first claim writes it, a claim of another store returns it unchanged, and a value written by
// hand is refused naming its remedy.
func TestRecords_Backends(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	zkAddr := testenv.MustZooKeeper(t).Addr()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.MustRedis(t).Addr()})
	defer rdb.Close()
	cases := map[string]struct {
		rec      StoreRecords
		scribble func() error
		remedy   string
	}{
		"redis": {
			rec:      redisRecords{cli: rdb, key: "lock:store"},
			scribble: func() error { return rdb.Set(ctx, "lock:store", "x", 0).Err() },
			remedy:   "redis-cli DEL lock:store",
		},
		"zookeeper": {
			rec: zkRecords{z: config.ZooKeeperConfig{Servers: []string{zkAddr}, SessionTimeout: 4 * time.Second}, path: "/sched:store"},
			scribble: func() error {
				return withZooKeeper(ctx, config.ZooKeeperConfig{Servers: []string{zkAddr}, SessionTimeout: 4 * time.Second}, func(conn *zk.Conn) error {
					_, err := conn.Set("/sched:store", []byte("x"), -1)
					return err
				})
			},
			remedy: "zkCli.sh delete /sched:store",
		},
	}
	a := scheduler.StoreID{ID: "a", Dialect: scheduler.SQLite}
	b := scheduler.StoreID{ID: "b", Dialect: scheduler.SQLite}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, ok, err := tc.rec.Recorded(ctx); ok || err != nil {
				t.Fatalf("record before any claim: ok %t, err %v; want none", ok, err)
			}
			if rec, err := tc.rec.Claim(ctx, a, "n1"); err != nil || !rec.Store.Same(a) {
				t.Fatalf("first claim: %+v, %v; want a's", rec, err)
			}
			if rec, err := tc.rec.Claim(ctx, b, "n2"); err != nil || !rec.Store.Same(a) || rec.By != "n1" {
				t.Fatalf("claim of another store: %+v, %v; want a's kept", rec, err)
			}
			if err := tc.scribble(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := tc.rec.Recorded(ctx); err == nil || !strings.Contains(err.Error(), tc.remedy) {
				t.Fatalf("read of a value written by hand: %v; want it refused naming %q", err, tc.remedy)
			}
		})
	}
}

// TestNew_EmbeddedEtcdNotJudged: with the embedded etcd (no etcd.endpoints) no store is
// recorded: that etcd is the replica's alone, in its data_dir beside its SQLite store, so a
// development store made again must not keep it from leading.
func TestNew_EmbeddedEtcdNotJudged(t *testing.T) {
	c := coordinatorOf(t, nil, testenv.MustEtcd(t).Client(t), scheduler.StoreID{ID: "x", Dialect: scheduler.SQLite})
	if _, judged := c.(*storeGate); judged {
		t.Fatalf("New with the embedded etcd returned a store gate, want the campaigner alone")
	}
}
