package main

import (
	"context"
	"encoding/json"
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

// backendServer is the server of a backend other than etcd for one test, with what the test
// needs to write to it by hand.
type backendServer struct {
	section string        // the backend's configuration section
	rdb     *redis.Client // redis
	zk      *zk.Conn      // zookeeper: a session of the test's own
	zkAddr  string
}

// startBackendServer starts backend's server (postgres needs none beyond the store).
func startBackendServer(t *testing.T, backend string) *backendServer {
	t.Helper()
	s := &backendServer{}
	switch backend {
	case config.BackendRedis:
		srv := testenv.MustRedis(t)
		s.rdb = redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { _ = s.rdb.Close() })
		s.section = fmt.Sprintf("redis: {addr: %s, key: 'test:leader'}", srv.Addr())
	case config.BackendZooKeeper:
		s.zkAddr = testenv.MustZooKeeper(t).Addr()
		s.zk = zkSession(t, s.zkAddr)
		s.section = fmt.Sprintf("zookeeper: {servers: [%s], session_timeout: 2s, path: /test/election}", s.zkAddr)
	}
	return s
}

// zkSession opens a session on addr, closed in t.Cleanup.
func zkSession(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// handWritten is a state written by hand into a backend while a replica leads.
type handWritten struct {
	backend string
	// write writes the state; undo sets it right, as the remedy says.
	write, undo func(t *testing.T, ctx context.Context, c *cluster, s *backendServer)
	// words are what readyz, status and /status say; remedy is among them.
	words  []string
	remedy string
	// foreign: the state is a hold of the election by no replica, after which the replica
	// leads again with a new token.
	foreign bool
}

// TestDaemon_BackendHandWrittenState: on each backend other than etcd, a state written by hand
// that keeps every replica from leading is named, with its remedy, by status, /status and
// /readyz (503), and once set right readyz answers 200 again. A hold of the election that no
// replica took (a lease row with an expiry far ahead, a lock of a campaigner's shape with a long
// TTL, an ephemeral candidate node of another client's session) cannot be told from a replica's
// by its shape, so it is reported, not removed. A state no replica can lead past (a lease row's
// token or the Redis counter at the largest int64, an access list on the ZooKeeper path that
// refuses the replicas) is named the same way. Each is logged at error level too.
func TestDaemon_BackendHandWrittenState(t *testing.T) {
	foreignWords := []string{"names no running replica"}
	cases := map[string]handWritten{
		"postgres/ForeignHolder": {backend: config.BackendPostgres, foreign: true, words: foreignWords,
			remedy: `UPDATE "scheduler".leader_lease SET holder = NULL WHERE name = 'scheduler'`,
			write: func(t *testing.T, ctx context.Context, c *cluster, _ *backendServer) {
				pgExec(t, ctx, c.dsn, `UPDATE scheduler.leader_lease SET node = 'intruder', holder = 'outsider', expires_at = 'infinity'`)
			},
			undo: func(t *testing.T, ctx context.Context, c *cluster, _ *backendServer) {
				pgExec(t, ctx, c.dsn, `UPDATE "scheduler".leader_lease SET holder = NULL WHERE name = 'scheduler'`)
			}},
		"postgres/TokenAtTheMaximum": {backend: config.BackendPostgres,
			remedy: "UPDATE leader_lease SET token = (SELECT max(token) FROM job_fence) WHERE name = 'scheduler'",
			write: func(t *testing.T, ctx context.Context, c *cluster, _ *backendServer) {
				pgExec(t, ctx, c.dsn, `UPDATE scheduler.leader_lease SET token = 9223372036854775807`)
			},
			undo: func(t *testing.T, ctx context.Context, c *cluster, _ *backendServer) {
				pgExec(t, ctx, c.dsn, `UPDATE scheduler.leader_lease SET token = (SELECT max(token) FROM scheduler.job_fence)`)
			}},
		"redis/ForeignHolder": {backend: config.BackendRedis, foreign: true, words: foreignWords, remedy: "redis-cli DEL test:leader",
			write: func(t *testing.T, ctx context.Context, _ *cluster, s *backendServer) {
				redisDo(t, s.rdb.Set(ctx, "test:leader", "999 outsider intruder", 24*time.Hour))
			},
			undo: func(t *testing.T, ctx context.Context, _ *cluster, s *backendServer) {
				redisDo(t, s.rdb.Del(ctx, "test:leader"))
			}},
		"redis/CounterAtTheMaximum": {backend: config.BackendRedis, remedy: "redis-cli SET test:leader:token",
			write: func(t *testing.T, ctx context.Context, _ *cluster, s *backendServer) {
				redisDo(t, s.rdb.Set(ctx, "test:leader:token", "9223372036854775807", 0))
			},
			undo: func(t *testing.T, ctx context.Context, _ *cluster, s *backendServer) {
				redisDo(t, s.rdb.Set(ctx, "test:leader:token", "100", 0))
			}},
		"zookeeper/ForeignHolder": {backend: config.BackendZooKeeper, foreign: true, words: foreignWords, remedy: "zkCli.sh delete /test/election/",
			write: func(t *testing.T, _ context.Context, _ *cluster, s *backendServer) {
				// An outsider's candidate, then the leader's node deleted: the leader's next
				// node stands behind the outsider's.
				foreign := zkSession(t, s.zkAddr)
				if _, err := foreign.CreateProtectedEphemeralSequential("/test/election/c-", []byte("intruder"), zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatal(err)
				}
				s.zk = foreign
				children, _, err := foreign.Children("/test/election")
				if err != nil {
					t.Fatal(err)
				}
				for _, ch := range children {
					if data, _, err := foreign.Get("/test/election/" + ch); err == nil && string(data) == "a" {
						if err := foreign.Delete("/test/election/"+ch, -1); err != nil {
							t.Fatal(err)
						}
					}
				}
			},
			undo: func(_ *testing.T, _ context.Context, _ *cluster, s *backendServer) { s.zk.Close() }},
		"zookeeper/AccessListRefusesReplicas": {backend: config.BackendZooKeeper, remedy: "zkCli.sh setAcl /test/election world:anyone:cdrwa",
			write: func(t *testing.T, _ context.Context, _ *cluster, s *backendServer) {
				if _, err := s.zk.SetACL("/test/election", zk.WorldACL(zk.PermRead|zk.PermAdmin), -1); err != nil {
					t.Fatal(err)
				}
			},
			undo: func(t *testing.T, _ context.Context, _ *cluster, s *backendServer) {
				if _, err := s.zk.SetACL("/test/election", zk.WorldACL(zk.PermAll), -1); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for name, hw := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s := startBackendServer(t, hw.backend)
			c := newBackendCluster(t, hw.backend, s.section)
			r := c.start("a")
			addr, first := c.leading()
			hw.write(t, ctx, c, s)
			words := append([]string{hw.remedy}, hw.words...)
			says := func(body string) bool {
				for _, w := range words {
					if !strings.Contains(body, w) {
						return false
					}
				}
				return true
			}
			saysJSON := func(body string) bool { // /status escapes the quotes of a remedy
				for _, w := range words {
					if !strings.Contains(body, jsonText(w)) {
						return false
					}
				}
				return true
			}
			c.wait("readyz to fail naming the state and its remedy", func() bool {
				code, body := httpGet(t, "http://"+addr+"/readyz")
				return code == 503 && says(body)
			})
			if out := c.cli("status"); !says(out) {
				t.Fatalf("status does not name the state and its remedy:\n%s", out)
			}
			if _, body := httpGet(t, "http://"+addr+"/status"); !saysJSON(body) {
				t.Fatalf("/status does not name the state and its remedy:\n%.1000s", body)
			}
			c.waitErrorLine(r, "the remedy", jsonText(hw.remedy))
			hw.undo(t, ctx, c, s)
			if hw.foreign {
				c.waitLeadsAfter("a", first.Token)
			}
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

// jsonText is s as a JSON string holds it, without the quotes.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// redisDo fails t when cmd failed.
func redisDo(t *testing.T, cmd redis.Cmder) {
	t.Helper()
	if err := cmd.Err(); err != nil {
		t.Fatal(err)
	}
}
