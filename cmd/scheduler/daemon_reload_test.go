package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/control"
	"scheduler/internal/status"
	"scheduler/internal/testenv"
)

// TestDaemon_ReloadRefusesOversizeOrSpecialFile: a SIGHUP reload reads through the same limits
// as validate. A file past config.MaxConfigBytes, or a named pipe in its place, is refused at once with
// the file and the reason named, and the running table keeps firing; so is a file that sets
// nothing or holds a second document.
func TestDaemon_ReloadRefusesOversizeOrSpecialFile(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	r := c.start("a")
	c.wait("tick runs", func() bool { return countStatus(c.history("tick"), scheduler.StatusSucceeded) >= 1 })
	good, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	restore := func() {
		t.Helper()
		_ = os.Remove(c.path)
		if err := os.WriteFile(c.path, good, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	big := append(append([]byte{}, good...), "\n#"+strings.Repeat("x", config.MaxConfigBytes)+"\n"...)
	if err := os.WriteFile(c.path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscallHUP(); err != nil {
		t.Fatal(err)
	}
	c.wait("the oversize reload to be rejected", func() bool { return strings.Contains(r.logs.String(), "reload rejected") })
	if logs := r.logs.String(); !strings.Contains(logs, "is larger than the limit of 16777216 bytes") || !strings.Contains(logs, filepath.Base(c.path)) {
		t.Fatalf("the rejection does not name the file and the limit:\n%s", logs)
	}
	restore() // for the CLI below; the daemon reads the file only on SIGHUP
	before := countStatus(c.history("tick"), scheduler.StatusSucceeded)
	c.wait("tick keeps running", func() bool { return countStatus(c.history("tick"), scheduler.StatusSucceeded) > before+1 })

	// A named pipe with no writer would block a plain open: the reload must refuse it instead.
	if err := os.Remove(c.path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(c.path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscallHUP(); err != nil {
		t.Fatal(err)
	}
	c.wait("the pipe reload to be rejected", func() bool { return strings.Contains(r.logs.String(), "is not a regular file (a named pipe)") })
	restore()
	before = countStatus(c.history("tick"), scheduler.StatusSucceeded)
	c.wait("tick keeps running after the pipe", func() bool { return countStatus(c.history("tick"), scheduler.StatusSucceeded) > before+1 })

	// A file emptied by a writer that has not finished, and one with a second document after
	// the first, were taken: a table of no jobs, or the first document's alone.
	for _, bad := range []struct{ body, says string }{
		{"", "the file holds no settings"},
		{"# being written\n", "the file holds no settings"},
		{string(good) + "\n---\njobs: []\n", "a second YAML document begins here"},
	} {
		if err := os.WriteFile(c.path, []byte(bad.body), 0o600); err != nil {
			t.Fatal(err)
		}
		n := strings.Count(r.logs.String(), bad.says)
		if err := syscallHUP(); err != nil {
			t.Fatal(err)
		}
		c.wait("the reload of "+bad.says+" to be rejected", func() bool { return strings.Count(r.logs.String(), bad.says) > n })
		restore()
		before = countStatus(c.history("tick"), scheduler.StatusSucceeded)
		c.wait("tick keeps running after "+bad.says, func() bool { return countStatus(c.history("tick"), scheduler.StatusSucceeded) > before+1 })
	}
	if strings.Contains(r.logs.String(), "configuration reloaded") {
		t.Fatalf("a bad file was reloaded:\n%s", r.logs.String())
	}
	if err := syscallHUP(); err != nil { // and a good reload still succeeds afterwards
		t.Fatal(err)
	}
	c.wait("a good reload", func() bool { return strings.Contains(r.logs.String(), "configuration reloaded") })
}

// TestDaemon_ReloadPublishesTable: after SIGHUP, /status, `status --json` and the replica's
// entry in etcd show the new table and its hash within a second, and a reload that changes only
// jobs asks for no restart.
func TestDaemon_ReloadPublishesTable(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	r := c.start("a")
	old := c.tableHash()
	var addr string
	c.wait("replica a registered", func() bool {
		rs := c.status().Replicas
		if len(rs) == 1 && rs[0].TableHash == old {
			addr = rs[0].HTTPAddr
		}
		return addr != ""
	})
	ctl, err := control.New(c.etcd.Client(t), "/test/election")
	if err != nil {
		t.Fatal(err)
	}

	// /status is read throughout the reload, for -race to see how the two meet.
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			default:
				if resp, err := http.Get("http://" + addr + "/status"); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}
	}()
	c.editConfig(func(body string) string { return body + addedJob })
	want := c.tableHash()
	if want == old {
		t.Fatal("the new table has the old hash")
	}
	if err := syscallHUP(); err != nil {
		t.Fatal(err)
	}
	hup := time.Now()
	published := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rs, err := ctl.Replicas(ctx)
		if err != nil {
			return err
		}
		if len(rs) != 1 || rs[0].TableHash != want {
			return fmt.Errorf("replicas in etcd = %+v, want a with table_hash %s", rs, want)
		}
		var doc status.Doc
		if code, body := httpGet(t, "http://"+addr+"/status"); code != http.StatusOK {
			return fmt.Errorf("/status: %d %s", code, body)
		} else if err := json.Unmarshal([]byte(body), &doc); err != nil {
			return err
		}
		if err := showsTable(doc, want, "tick", "yearly", "added"); err != nil {
			return fmt.Errorf("/status: %w", err)
		}
		return nil
	}
	for err := published(); err != nil; err = published() {
		if time.Since(hup) > time.Second {
			t.Fatalf("%s after SIGHUP: %v", time.Since(hup), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	<-polled
	if err := showsTable(c.status(), want, "tick", "yearly", "added"); err != nil {
		t.Fatalf("status --json: %v", err)
	}
	if took := time.Since(hup); took > time.Second {
		t.Fatalf("status --json showed the new table %s after SIGHUP, want within 1s", took)
	}
	c.wait("the reload's log line", func() bool { return strings.Contains(r.logs.String(), "configuration reloaded") })
	if logs := r.logs.String(); strings.Contains(logs, "apply only after a restart") {
		t.Fatalf("a reload of jobs alone asks for a restart:\n%s", logs)
	}
}

// TestDaemon_ReloadNamesSettingsThatNeedRestart: a reload applies the new table, and names at
// warn level every other changed setting, which keeps its value until a restart.
func TestDaemon_ReloadNamesSettingsThatNeedRestart(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	r := c.start("a")
	c.wait("tick runs", func() bool { return countStatus(c.history("tick"), scheduler.StatusSucceeded) >= 1 })
	c.editConfig(func(body string) string {
		body = strings.NewReplacer("ttl: 2s", "ttl: 3s", "shutdown_grace: 2s", "shutdown_grace: 5s", "level: debug", "level: info").
			Replace(body)
		// metrics.per_job and history.max_runs are applied by a reload, so they are not named.
		body = strings.Replace(body, "\njobs:\n", "\nhistory: {prune_batch: 100, max_runs: 50}\nmetrics: {per_job: \"off\"}\njobs:\n", 1)
		return body + addedJob
	})
	if err := syscallHUP(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	c.wait("the restart warning", func() bool {
		for _, line := range strings.Split(r.logs.String(), "\n") {
			var e struct {
				Level string   `json:"level"`
				Msg   string   `json:"msg"`
				Keys  []string `json:"keys"`
			}
			if json.Unmarshal([]byte(line), &e) == nil && e.Msg == "changed settings apply only after a restart" {
				if e.Level != "warn" {
					t.Fatalf("level %s, want warn: %s", e.Level, line)
				}
				keys = e.Keys
				return true
			}
		}
		return false
	})
	if want := []string{"election.ttl", "history.prune_batch", "log.level", "shutdown_grace"}; !slices.Equal(keys, want) {
		t.Fatalf("keys=%q, want %q", keys, want)
	}
	if !strings.Contains(r.logs.String(), "configuration reloaded") {
		t.Fatal("the table was not reloaded")
	}
	if err := showsTable(c.status(), c.tableHash(), "tick", "yearly", "added"); err != nil {
		t.Fatalf("status --json: %v", err)
	}
}

// addedJob is a job to append to the table of a cluster's configuration.
const addedJob = "  - name: added\n    schedule: '@yearly'\n    type: sql\n    sql: \"INSERT INTO stock_scans (sku, quantity) VALUES ('added', 1)\"\n"

// editConfig rewrites c's configuration file with edit, keeping everything else (writeConfig
// would give it a new data_dir).
func (c *cluster) editConfig(edit func(string) string) {
	c.t.Helper()
	b, err := os.ReadFile(c.path)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(c.path, []byte(edit(string(b))), 0o600); err != nil {
		c.t.Fatal(err)
	}
}

// tableHash is the hash of the table in c's configuration file.
func (c *cluster) tableHash() string {
	c.t.Helper()
	cfg, err := config.Load(c.path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return config.TableHash(cfg)
}

// showsTable reports how doc differs from one replica running the jobs named, with hash.
func showsTable(doc status.Doc, hash string, jobs ...string) error {
	var names []string
	for _, j := range doc.Jobs {
		names = append(names, j.Name)
	}
	slices.Sort(names)
	jobs = slices.Sorted(slices.Values(jobs))
	if !slices.Equal(names, jobs) {
		return fmt.Errorf("jobs=%q, want %q", names, jobs)
	}
	if len(doc.Replicas) != 1 || doc.Replicas[0].TableHash != hash {
		return fmt.Errorf("replicas=%+v, want one with table_hash %s", doc.Replicas, hash)
	}
	for _, w := range doc.Warnings {
		if strings.Contains(w, "different job tables") {
			return fmt.Errorf("warning %q", w)
		}
	}
	return nil
}

// TestDaemon_ReloadRepublishesTableHash: a reload that changes the table publishes the new
// table hash, so `status` compares the tables the replicas run now. Two replicas started on
// different tables are reported as such; once a SIGHUP gives both the same table, both entries
// carry its hash and the warning is gone.
func TestDaemon_ReloadRepublishesTableHash(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	c.start("a")
	c.wait("a registered", func() bool { return len(c.status().Replicas) == 1 })
	added := "  - name: added\n    schedule: '@yearly'\n    type: sql\n    sql: \"INSERT INTO stock_scans (sku, quantity) VALUES ('added', 1)\"\n"
	c.writeConfig(testJobs + added)
	c.start("b")
	hashes := func() map[string]string {
		h := map[string]string{}
		for _, r := range c.status().Replicas {
			h[r.Node] = r.TableHash
		}
		return h
	}
	c.wait("both replicas registered", func() bool { return len(hashes()) == 2 })
	if h := hashes(); h["a"] == h["b"] {
		t.Fatalf("table hashes %v, want a and b to differ before the reload", h)
	}
	if w := c.status().Warnings; len(w) == 0 {
		t.Fatalf("no warning while the replicas run different tables")
	}
	if err := syscallHUP(); err != nil {
		t.Fatal(err)
	}
	c.wait("a's entry to carry the reloaded table's hash", func() bool {
		h := hashes()
		return h["a"] != "" && h["a"] == h["b"]
	})
	if w := c.status().Warnings; len(w) != 0 {
		t.Fatalf("warnings %q after both replicas reloaded the same table", w)
	}
}
