package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/testenv"
)

// newBackendCluster writes a config for a fresh database and the given backend section, and
// migrates the store. No etcd runs: a test fails if anything reaches for one.
func newBackendCluster(t *testing.T, backend, section string) *cluster {
	t.Helper()
	c := &cluster{t: t, dsn: testenv.MustDatabase(t), replicas: map[string]*replica{}}
	c.path = filepath.Join(t.TempDir(), "scheduler.yaml")
	body := fmt.Sprintf(`
data_dir: %s
election: {backend: %s, ttl: 2s}
%s
store: {dsn: %q}
http: {addr: "127.0.0.1:0"}
log: {level: debug}
shutdown_grace: 2s
%s`, t.TempDir(), backend, section, c.dsn, testJobs)
	if err := os.WriteFile(c.path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "migrate", "--config", c.path); code != 0 {
		t.Fatalf("migrate: %d %s %s", code, out, errOut)
	}
	return c
}

// TestDaemon_Backends runs two replicas on each backend other than etcd, with no etcd at all,
// and checks from the ledger and status what the etcd cluster test checks: one leader runs the
// jobs, pause and trigger reach it, status shows the leader and both replicas, and a SIGTERM
// hands over at once to a term with a higher token; every slot has one row.
func TestDaemon_Backends(t *testing.T) {
	backends := map[string]func(t *testing.T) string{
		config.BackendPostgres: func(*testing.T) string { return "" },
		config.BackendZooKeeper: func(t *testing.T) string {
			return fmt.Sprintf("zookeeper: {servers: [%s], session_timeout: 2s, path: /test/election}", testenv.MustZooKeeper(t).Addr())
		},
		config.BackendRedis: func(t *testing.T) string {
			return fmt.Sprintf("redis: {addr: %s, key: 'test:leader'}", testenv.MustRedis(t).Addr())
		},
	}
	for _, backend := range []string{config.BackendPostgres, config.BackendZooKeeper, config.BackendRedis} {
		t.Run(backend, func(t *testing.T) {
			c := newBackendCluster(t, backend, backends[backend](t))
			c.start("a")
			c.start("b")
			c.wait("a leader running tick", func() bool {
				doc := c.status()
				return doc.Leader != nil && countStatus(c.history("tick"), scheduler.StatusSucceeded) >= 2
			})
			c.wait("both replicas registered", func() bool { return len(c.status().Replicas) == 2 })
			doc := c.status()
			if len(doc.Warnings) != 0 || doc.Jobs[0].Last == nil {
				t.Fatalf("status: %+v", doc)
			}
			leader := doc.Leader
			var addr string
			for _, r := range doc.Replicas {
				if r.Node == leader.Node {
					addr = r.HTTPAddr
				}
			}
			if _, body := httpGet(t, "http://"+addr+"/metrics"); !strings.Contains(body, "scheduler_leader_changes_total 1") {
				t.Errorf("the leader's /metrics does not count the one leader it has seen:\n%.2000s", body)
			}
			for path, want := range map[string]string{"/readyz": "ready", "/metrics": "scheduler_is_leader 1", "/status": `"node": "` + leader.Node + `"`} {
				if code, body := httpGet(t, "http://"+addr+path); code != 200 || !strings.Contains(body, want) {
					t.Errorf("GET %s = %d, want 200 with %q:\n%.500s", path, code, want, body)
				}
			}

			c.cli("pause", "tick")
			c.wait("a paused slot", func() bool {
				for _, r := range c.history("tick") {
					if r.Status == scheduler.StatusSkipped && r.Reason == "paused" {
						return true
					}
				}
				return false
			})
			if st := c.status(); !st.Jobs[0].Paused {
				t.Fatalf("status does not show tick paused: %+v", st.Jobs[0])
			}
			c.cli("resume", "tick")

			c.cli("trigger", "yearly")
			c.wait("the manual run of yearly", func() bool { return countStatus(c.history("yearly"), scheduler.StatusSucceeded) == 1 })
			if r := c.history("yearly")[0]; !r.Manual || r.Token != leader.Token {
				t.Fatalf("manual run %+v, want one under token %d", r, leader.Token)
			}

			start := time.Now()
			next := c.handOver(t, leader)
			if next.Token <= leader.Token {
				t.Fatalf("new token %d not above %d", next.Token, leader.Token)
			}
			t.Logf("%s: handover from %s (token %d) to %s (token %d) seen after %s (TTL 2s)",
				backend, leader.Node, leader.Token, next.Node, next.Token, time.Since(start))
			c.wait("runs under the new token", func() bool {
				runs := c.history("tick")
				return runs[0].Status == scheduler.StatusSucceeded && runs[0].Token == next.Token
			})
			seen := map[time.Time]bool{}
			for _, r := range c.history("tick") {
				if seen[r.ScheduledAt] {
					t.Fatalf("slot %s has two rows", r.ScheduledAt)
				}
				seen[r.ScheduledAt] = true
			}
		})
	}
}
