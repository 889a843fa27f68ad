package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"scheduler/internal/fence"
	"scheduler/internal/testenv"
)

// TestDaemon_ReloadRefusesOversizeOrSpecialFile: a SIGHUP reload reads through the same limits
// as validate. A file past MaxConfigBytes, or a named pipe in its place, is refused at once with
// the file and the reason named, and the running table keeps firing.
func TestDaemon_ReloadRefusesOversizeOrSpecialFile(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	r := c.start("a")
	c.wait("tick runs", func() bool { return countStatus(c.history("tick"), fence.StatusSucceeded) >= 1 })
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

	big := append(append([]byte{}, good...), "\n#"+strings.Repeat("x", MaxConfigBytes)+"\n"...)
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
	before := countStatus(c.history("tick"), fence.StatusSucceeded)
	c.wait("tick keeps running", func() bool { return countStatus(c.history("tick"), fence.StatusSucceeded) > before+1 })

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
	before = countStatus(c.history("tick"), fence.StatusSucceeded)
	c.wait("tick keeps running after the pipe", func() bool { return countStatus(c.history("tick"), fence.StatusSucceeded) > before+1 })
	if err := syscallHUP(); err != nil { // and a good reload still succeeds afterwards
		t.Fatal(err)
	}
	c.wait("a good reload", func() bool { return strings.Contains(r.logs.String(), "configuration reloaded") })
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
