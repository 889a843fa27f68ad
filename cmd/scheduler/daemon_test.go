package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/election"
	"scheduler/internal/status"
	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// syncBuffer is a bytes.Buffer safe for the daemon's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cluster is a test deployment: a real etcd, a real store, a config file, replicas in-process.
type cluster struct {
	t        *testing.T
	etcd     *testenv.Etcd
	dsn      string
	path     string
	replicas map[string]*replica
}

type replica struct {
	node   string
	cancel context.CancelFunc
	done   chan error
	logs   *syncBuffer
}

const testJobs = `
jobs:
  - name: tick
    schedule: "* * * * * *"
    type: sql
    sql: "INSERT INTO stock_scans (sku, quantity) VALUES ('tick', 1)"
    misfire: skip
  - name: yearly
    schedule: "@yearly"
    type: sql
    sql: "INSERT INTO stock_scans (sku, quantity) VALUES ('yearly', 1)"
`

// newCluster writes a config for a fresh database and etcd, and migrates the store.
func newCluster(t *testing.T, dsn string, extra string) *cluster {
	t.Helper()
	c := &cluster{t: t, etcd: testenv.MustEtcd(t), dsn: dsn, replicas: map[string]*replica{}}
	c.path = filepath.Join(t.TempDir(), "scheduler.yaml")
	c.writeConfig(testJobs + extra)
	if code, out, errOut := runCLI(t, "migrate", "--config", c.path); code != 0 {
		t.Fatalf("migrate: %d %s %s", code, out, errOut)
	}
	return c
}

func (c *cluster) writeConfig(jobs string) {
	c.t.Helper()
	// A cluster on SQLite shares one data_dir between its in-process replicas, so it is one
	// deployment of a single node as far as the store is concerned.
	single := c.dsn == ""
	body := fmt.Sprintf(`
single_node: %t
data_dir: %s
etcd: {endpoints: [%s]}
election: {prefix: /test/election, ttl: 2s}
store: {dsn: %q}
http: {addr: "127.0.0.1:0"}
log: {level: debug}
shutdown_grace: 2s
%s`, single, c.t.TempDir(), strings.Join(c.etcd.Endpoints(), ", "), c.dsn, jobs)
	if err := os.WriteFile(c.path, []byte(body), 0o600); err != nil {
		c.t.Fatal(err)
	}
}

// start runs a replica in-process until stop or the end of the test.
func (c *cluster) start(node string) *replica {
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{node: node, cancel: cancel, done: make(chan error, 1), logs: &syncBuffer{}}
	go func() { r.done <- run(ctx, []string{"run", "--config", c.path, "--node", node}, nil, r.logs, r.logs) }()
	c.replicas[node] = r
	c.t.Cleanup(func() { r.stop(c.t) })
	return r
}

// stop is SIGTERM for an in-process replica: it cancels the run context and waits.
func (r *replica) stop(t *testing.T) error {
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("replica %s did not stop; logs:\n%s", r.node, r.logs)
		return nil
	}
}

// cli runs a command against the cluster's config.
func (c *cluster) cli(args ...string) string {
	c.t.Helper()
	code, out, errOut := runCLI(c.t, append(args, "--config", c.path)...)
	if code != 0 {
		c.t.Fatalf("scheduler %v: exit %d: %s%s", args, code, out, errOut)
	}
	return out
}

// handOver stops the replica of leader old and returns the leader that follows, once another
// replica leads.
func (c *cluster) handOver(t *testing.T, old *status.Leader) *status.Leader {
	t.Helper()
	if err := c.replicas[old.Node].stop(t); err != nil {
		t.Fatalf("stop %s: %v", old.Node, err)
	}
	var next *status.Leader
	c.wait("the other replica to lead", func() bool {
		next = c.status().Leader
		return next != nil && next.Node != old.Node
	})
	return next
}

func (c *cluster) history(job string) []scheduler.Run {
	c.t.Helper()
	var runs []scheduler.Run
	if err := json.Unmarshal([]byte(c.cli("history", job, "--json", "--limit", "1000")), &runs); err != nil {
		c.t.Fatal(err)
	}
	return runs
}

func (c *cluster) status() status.Doc {
	c.t.Helper()
	var doc status.Doc
	if err := json.Unmarshal([]byte(c.cli("status", "--json")), &doc); err != nil {
		c.t.Fatal(err)
	}
	return doc
}

// wait polls cond, and logs the replicas' logs if the test ends while it waits; the bound only
// keeps a broken test from hanging.
func (c *cluster) wait(what string, cond func() bool) {
	c.t.Helper()
	held := false
	defer func() {
		if !held { // the test ends here: Eventually gave up, or cond failed it
			for _, r := range c.replicas {
				c.t.Logf("logs of %s:\n%s", r.node, r.logs)
			}
		}
	}()
	testenv.Eventually(c.t, 30*time.Second, 100*time.Millisecond, what, cond)
	held = true
}

func countStatus(runs []scheduler.Run, st scheduler.Status) int {
	n := 0
	for _, r := range runs {
		if r.Status == st {
			n++
		}
	}
	return n
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDaemon_Cluster(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	c.start("a")
	c.start("b")
	var leader string
	c.wait("a leader running tick", func() bool {
		doc := c.status()
		if doc.Leader == nil || doc.Leader.Since == nil {
			return false
		}
		leader = doc.Leader.Node
		return countStatus(c.history("tick"), scheduler.StatusSucceeded) >= 2
	})
	doc := c.status()
	if len(doc.Replicas) != 2 || len(doc.Warnings) != 0 || doc.Jobs[0].Next == nil || doc.Jobs[0].Last == nil {
		t.Fatalf("status: %+v", doc)
	}

	t.Run("HTTP", func(t *testing.T) {
		var addr string
		for _, r := range doc.Replicas {
			if r.Node == leader {
				addr = r.HTTPAddr
			}
		}
		for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/metrics": "scheduler_is_leader 1", "/status": `"node": "` + leader + `"`} {
			code, body := httpGet(t, "http://"+addr+path)
			if code != 200 || !strings.Contains(body, want) {
				t.Errorf("GET %s = %d, want 200 with %q:\n%.500s", path, code, want, body)
			}
		}
		if _, body := httpGet(t, "http://"+addr+"/metrics"); !strings.Contains(body, `scheduler_runs_total{job="tick",status="succeeded"}`) {
			t.Errorf("no runs counter in /metrics")
		}
	})

	t.Run("PauseAndResume", func(t *testing.T) {
		c.cli("pause", "tick")
		var pausedAt time.Time
		c.wait("a paused slot", func() bool {
			for _, r := range c.history("tick") {
				if r.Status == scheduler.StatusSkipped && r.Reason == "paused" {
					pausedAt = r.ScheduledAt
					return true
				}
			}
			return false
		})
		if st := c.status(); !st.Jobs[0].Paused {
			t.Fatalf("status does not show tick paused: %+v", st.Jobs[0])
		}
		time.Sleep(1500 * time.Millisecond) // let more slots come while paused
		c.cli("resume", "tick")
		c.wait("runs after resume", func() bool {
			runs := c.history("tick")
			return runs[0].Status == scheduler.StatusSucceeded && runs[0].ScheduledAt.After(pausedAt)
		})
		var paused, ranWhilePaused int
		resumed := false
		for _, r := range c.history("tick") { // newest first
			// The runs since the resume, and the next slot's, claimed ahead (running) by now.
			if (r.Status == scheduler.StatusSucceeded || r.Status == scheduler.StatusRunning) && !resumed {
				continue
			}
			resumed = true
			if !r.ScheduledAt.Before(pausedAt) && r.Status == scheduler.StatusSkipped {
				paused++
			}
			if !r.ScheduledAt.Before(pausedAt) && r.Status == scheduler.StatusSucceeded {
				ranWhilePaused++
			}
		}
		if paused < 2 || ranWhilePaused > 0 {
			t.Fatalf("while paused: %d slots skipped, %d ran", paused, ranWhilePaused)
		}
	})

	t.Run("Trigger", func(t *testing.T) {
		c.cli("trigger", "yearly")
		c.wait("the manual run of yearly", func() bool { return countStatus(c.history("yearly"), scheduler.StatusSucceeded) == 1 })
		r := c.history("yearly")[0]
		if !r.Manual || r.Token != c.status().Leader.Token {
			t.Fatalf("run %+v", r)
		}
	})

	t.Run("GracefulHandover", func(t *testing.T) {
		old := c.status().Leader
		start := time.Now()
		next := c.handOver(t, old)
		took := time.Since(start)
		if next.Token <= old.Token {
			t.Fatalf("new token %d not above %d", next.Token, old.Token)
		}
		t.Logf("handover from %s (token %d) to %s (token %d) seen after %s (TTL 2s)", old.Node, old.Token, next.Node, next.Token, took)
		newToken := next.Token
		c.wait("runs under the new token", func() bool {
			runs := c.history("tick")
			return runs[0].Status == scheduler.StatusSucceeded && runs[0].Token == newToken
		})
	})

	// Every slot has at most one row (the ledger key), and the writes match the runs.
	runs := c.history("tick")
	seen := map[time.Time]bool{}
	for _, r := range runs {
		if seen[r.ScheduledAt] {
			t.Fatalf("slot %s has two rows", r.ScheduledAt)
		}
		seen[r.ScheduledAt] = true
	}
}

func TestDaemon_TriggerWhileLeaderless(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	c.cli("trigger", "yearly") // no replica runs: the request waits in etcd
	if runs := c.history("yearly"); len(runs) != 0 {
		t.Fatalf("ran without a leader: %+v", runs)
	}
	c.start("a")
	c.wait("the waiting trigger to run", func() bool { return countStatus(c.history("yearly"), scheduler.StatusSucceeded) == 1 })
}

func TestDaemon_ReloadKeepsTableOnBadConfig(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	r := c.start("a")
	c.wait("tick runs", func() bool { return countStatus(c.history("tick"), scheduler.StatusSucceeded) >= 1 })
	c.writeConfig(testJobs + "  - name: broken\n    schedule: '99 * * * *'\n    type: sql\n    sql: x\n")
	if err := syscallHUP(); err != nil {
		t.Fatal(err)
	}
	c.wait("the rejected reload", func() bool { return strings.Contains(r.logs.String(), "reload rejected") })
	if !strings.Contains(r.logs.String(), "jobs[2].schedule") {
		t.Fatalf("the rejection does not name the key:\n%s", r.logs)
	}
	c.writeConfig(testJobs) // for the CLI below; the daemon reads the file only on SIGHUP
	before := countStatus(c.history("tick"), scheduler.StatusSucceeded)
	c.wait("tick keeps running", func() bool { return countStatus(c.history("tick"), scheduler.StatusSucceeded) > before+1 })

	c.writeConfig(testJobs + "  - name: added\n    schedule: '* * * * * *'\n    type: sql\n    sql: \"INSERT INTO stock_scans (sku, quantity) VALUES ('added', 1)\"\n")
	if err := syscallHUP(); err != nil {
		t.Fatal(err)
	}
	c.wait("the added job to run", func() bool { return countStatus(c.history("added"), scheduler.StatusSucceeded) >= 1 })
}

func TestDaemon_SecretsStayOutOfLogs(t *testing.T) {
	pg := testenv.MustPostgres(t)
	base := pg.CreateDatabase(t)
	const secret = "s3cr3t-Pa55word"
	dsn := testenv.MustPasswordRole(t, base, "sched", secret)
	c := newCluster(t, dsn, "")
	r := c.start("a")
	c.wait("tick runs", func() bool { return countStatus(c.history("tick"), scheduler.StatusSucceeded) >= 1 })
	out := c.cli("status", "--json")
	if strings.Contains(r.logs.String(), secret) || strings.Contains(out, secret) {
		t.Fatalf("the password appears in the logs or the status")
	}
	// A store that cannot be reached fails with exit 1, without echoing the DSN's password.
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = "127.0.0.1:1"
	c.dsn = u.String()
	c.writeConfig(testJobs)
	code, o, e := runCLI(t, "history", "tick", "--config", c.path)
	if code != 1 || strings.Contains(o+e, secret) {
		t.Fatalf("exit %d, output leaks the password or passed:\n%s%s", code, o, e)
	}
}

// TestDaemon_EmbeddedDefault runs the development setup of the README: embedded etcd and
// SQLite in data_dir, no endpoints, no DSN.
func TestDaemon_EmbeddedDefault(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "scheduler.yaml")
	body := fmt.Sprintf("data_dir: %s\nhttp: {addr: \"127.0.0.1:0\"}\nelection: {ttl: 2s}\n%s", filepath.Join(dir, "data"), testJobs)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "migrate", "--config", path); code != 0 {
		t.Fatalf("migrate: %s%s", out, errOut)
	}
	c := &cluster{t: t, path: path, replicas: map[string]*replica{}}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{node: "dev", cancel: cancel, done: make(chan error, 1), logs: &syncBuffer{}}
	go func() { r.done <- run(ctx, []string{"run", "--config", path, "--node", "dev"}, nil, r.logs, r.logs) }()
	c.replicas["dev"] = r
	t.Cleanup(func() { r.stop(t) })
	c.wait("the embedded default to elect itself and run", func() bool {
		if _, err := election.EmbeddedEndpoints(filepath.Join(dir, "data")); err != nil {
			return false
		}
		doc := c.status()
		return doc.Leader != nil && doc.Leader.Node == "dev" && countStatus(c.history("tick"), scheduler.StatusSucceeded) >= 1
	})
	if !strings.Contains(r.logs.String(), "development only") {
		t.Fatal("no log line says the embedded etcd is for development only")
	}
}

func TestDaemon_RefusesSchemaBehind(t *testing.T) {
	c := &cluster{t: t, etcd: testenv.MustEtcd(t), dsn: testenv.MustDatabase(t), replicas: map[string]*replica{}}
	c.path = filepath.Join(t.TempDir(), "scheduler.yaml")
	c.writeConfig(testJobs)
	code, _, errOut := runCLI(t, "run", "--config", c.path)
	if code != 1 || !strings.Contains(errOut, "scheduler migrate") {
		t.Fatalf("exit %d, want 1 and advice to run scheduler migrate:\n%s", code, errOut)
	}
}

// syscallHUP sends SIGHUP to this process, as an operator's reload would.
func syscallHUP() error { return syscall.Kill(os.Getpid(), syscall.SIGHUP) }

// TestDaemon_ExecJobSeesToken: an exec job gets the leader's token in its environment, and its
// runs are in `history --json` with status and token.
func TestDaemon_ExecJobSeesToken(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), `  - name: show
    schedule: "* * * * * *"
    type: exec
    command: [sh, -c, 'echo "token=$SCHEDULER_FENCE_TOKEN job=$SCHEDULER_JOB attempt=$SCHEDULER_ATTEMPT"']
`)
	c.start("a")
	c.wait("an exec run", func() bool { return countStatus(c.history("show"), scheduler.StatusSucceeded) >= 1 })
	leader := c.status().Leader
	for _, r := range c.history("show") {
		if r.Status != scheduler.StatusSucceeded {
			continue
		}
		want := fmt.Sprintf("token=%d job=show attempt=1", leader.Token)
		if r.Token != leader.Token || !strings.Contains(r.Output, want) {
			t.Fatalf("run token %d output %q, want token %d and %q", r.Token, r.Output, leader.Token, want)
		}
	}
}

// TestDaemon_ShutdownOrder: on SIGTERM the leader stops firing, gives a running job its grace,
// cancels it after the grace, and resigns; the follower takes over at once and finishes the
// interrupted slot.
func TestDaemon_ShutdownOrder(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), `  - name: slow
    schedule: "*/5 * * * * *"
    type: exec
    command: [sh, -c, 'sleep 4; echo done by $SCHEDULER_FENCE_TOKEN']
    timeout: 30s
  - name: quick
    schedule: "*/5 * * * * *"
    type: exec
    command: [sh, -c, 'sleep 1; echo quick']
`)
	c.start("a")
	c.wait("a to lead", func() bool { l := c.status().Leader; return l != nil && l.Node == "a" })
	c.start("b")
	// Catch a moment when both jobs run on the leader. Slots are claimed shortly before they
	// fire, so a running row may still wait for its slot: take one whose slot has come.
	var slot time.Time
	c.wait("runs in flight", func() bool {
		now := time.Now()
		for _, r := range c.history("slow") {
			if r.Status == scheduler.StatusRunning && r.ScheduledAt.Before(now.Add(-100*time.Millisecond)) {
				slot = r.ScheduledAt
				return true
			}
		}
		return false
	})
	old := c.status().Leader
	stopped := time.Now()
	if err := c.replicas["a"].stop(t); err != nil { // shutdown_grace is 2s
		t.Fatal(err)
	}
	took := time.Since(stopped)
	logs := c.replicas["a"].logs.String()
	// The quick job (1s) finished within the grace; the slow one (4s) was cancelled after it.
	iDrain := strings.Index(logs, `"shutting down"`)
	iInterrupted := strings.Index(logs, "run interrupted; the next leader takes it over")
	iEnded := strings.Index(logs, `"leadership ended"`)
	if iDrain < 0 || iInterrupted < iDrain || iEnded < iInterrupted {
		t.Fatalf("shutdown order wrong (drain %d, interrupted %d, resign %d):\n%s", iDrain, iInterrupted, iEnded, logs)
	}
	if took < 2*time.Second {
		t.Fatalf("stopped after %s: the slow job did not get its 2s grace", took)
	}
	var next *status.Leader
	c.wait("b to lead", func() bool { next = c.status().Leader; return next != nil && next.Node == "b" })
	if next.Token <= old.Token {
		t.Fatalf("token %d not above %d", next.Token, old.Token)
	}
	c.wait("b to finish the interrupted slot", func() bool {
		for _, r := range c.history("slow") {
			if r.ScheduledAt.Equal(slot) {
				return r.Status == scheduler.StatusSucceeded && r.Node == "b" && r.Attempt == 2 && r.Token == next.Token
			}
		}
		return false
	})
	for _, r := range c.history("quick") {
		if r.Node == "a" && r.Status == scheduler.StatusRunning {
			t.Fatalf("a quick run was left running although it fit in the grace: %+v", r)
		}
	}
}

// TestMigrate_Concurrent runs `scheduler migrate` twice at the same time against a fresh
// database, as replicas of one deployment would: both succeed and the schema is current.
func TestMigrate_Concurrent(t *testing.T) {
	c := &cluster{t: t, etcd: testenv.MustEtcd(t), dsn: testenv.MustDatabase(t), replicas: map[string]*replica{}}
	c.path = filepath.Join(t.TempDir(), "scheduler.yaml")
	c.writeConfig(testJobs)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	outs := make([]string, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var o, e string
			codes[i], o, e = runCLI(t, "migrate", "--config", c.path)
			outs[i] = o + e
		}()
	}
	wg.Wait()
	for i, code := range codes {
		if code != 0 || !strings.Contains(outs[i], "schema is current") {
			t.Fatalf("migrate %d: exit %d\n%s", i, code, outs[i])
		}
	}
	if code, out, errOut := runCLI(t, "migrate", "--config", c.path); code != 0 {
		t.Fatalf("a third migrate: exit %d %s%s", code, out, errOut)
	}
}
