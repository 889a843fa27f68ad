package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// dataDirInUse starts a second daemon on the data directory of a running one, as a second
// `make run` does: the development setup, with the embedded etcd and SQLite in data_dir. The
// second must fail at once (exit 1) and name the directory and the holder's pid, instead of
// waiting without end for the embedded etcd's file lock. Once the first is killed (SIGKILL: no
// cleanup of its own), the second starts on the same directory: the lock died with its holder.
func (s *suite) dataDirInUse(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "dev.yaml")
	body := fmt.Sprintf(`data_dir: %s
election: {ttl: %s}
http: {addr: ""}
log: {level: info, format: json}
jobs:
%s`, data, ttl, workload{schedule: "@every 1s", every: time.Second, clients: 1}.yaml())
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	migrate := exec.CommandContext(ctx, s.bins.scheduler, "migrate", "--config", cfg)
	migrate.Env = childEnv()
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("scheduler migrate: %v\n%s", err, out)
	}

	firstLog := filepath.Join(dir, "first.log")
	first := startProcess(t, "first", firstLog, s.bins.scheduler, "run", "--config", cfg, "--node", "first")
	waitLogged(t, first, firstLog, "campaign won", 30*time.Second)

	secondLog := filepath.Join(dir, "second.log")
	second := startProcess(t, "second", secondLog, s.bins.scheduler, "run", "--config", cfg, "--node", "second")
	code, err := second.wait(15 * time.Second)
	if err != nil {
		t.Fatalf("a second daemon on the data dir of a running one: %v; its log:\n%s", err, second.tail(20))
	}
	out := second.tail(20)
	want := fmt.Sprintf("data dir %s is in use by pid %d (node first)", data, first.pid())
	if code != 1 || !strings.Contains(out, want) {
		t.Fatalf("second daemon: exit %d, want 1 with %q; its log:\n%s", code, want, out)
	}
	if first.exited() {
		t.Fatalf("the first daemon exited; its log:\n%s", first.tail(20))
	}

	first.kill()
	third := startProcess(t, "third", secondLog, s.bins.scheduler, "run", "--config", cfg, "--node", "second")
	waitLogged(t, third, secondLog, "campaign won", 30*time.Second)
}

// waitLogged waits until p's JSON log at path has a line with msg, and fails if p exits first.
func waitLogged(t *testing.T, p *process, path, msg string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, e := range readLog(path) {
			if e.Msg == msg {
				return
			}
		}
		if p.exited() {
			t.Fatalf("%s exited before logging %q:\n%s", p.name, msg, p.tail(20))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %q within %v:\n%s", p.name, msg, within, p.tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
