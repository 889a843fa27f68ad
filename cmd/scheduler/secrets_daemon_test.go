package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/kinds"
	"scheduler/internal/testenv"
)

// leakJob prints a secret handed to it, as a job that found one would: on two lines, then
// where the stored output's head ends and where its tail starts (with head and tail around it).
const leakJob = `
jobs:
  - name: leak
    schedule: "* * * * * *"
    type: exec
    env: {leaked: %q, head: %q, tail: %q}
    command: [sh, -c, 'echo "found $leaked"; echo "and again: $leaked" >&2; printf %%s "$head$leaked"; printf "%%3000s" "" | tr " " y; printf %%s "$leaked$tail"; exit 3']
    misfire: skip
`

// leakOutput returns what leakJob prints with secret, and the env values head and tail that
// make the secret straddle the cuts of the stored output.
func leakOutput(secret string) (out, head, tail string) {
	lines := "found " + secret + "\nand again: " + secret + "\n"
	half := kinds.DefaultOutputLimit / 2
	head = strings.Repeat("x", half-len(lines)-len(secret)/2)
	tail = strings.Repeat("z", half-len(secret)/2)
	return lines + head + secret + strings.Repeat("y", 3000) + secret + tail, head, tail
}

// TestDaemon_ScrubsSecretsFromRuns runs the daemon with its secrets read from files, on each
// store: Postgres with a password in the DSN, and SQLite with etcd authentication. A job that
// prints a secret gets [redacted] stored in its place, in history and in status.
func TestDaemon_ScrubsSecretsFromRuns(t *testing.T) {
	t.Run("Postgres", func(t *testing.T) {
		const secret = "pg-Pa55-in-the-dsn"
		dsn := testenv.MustPasswordRole(t, testenv.MustDatabase(t), "scrub", secret)
		dir := t.TempDir()
		dsnFile := filepath.Join(dir, "store_dsn")
		writeFile(t, dsnFile, dsn+"\n")
		etcd := testenv.MustEtcd(t)
		checkScrubbed(t, dir, secret, fmt.Sprintf("etcd: {endpoints: [%s]}\nstore: {dsn_file: %s}\n",
			strings.Join(etcd.Endpoints(), ", "), dsnFile))
	})
	t.Run("SQLite", func(t *testing.T) {
		const secret = "etcd-Pa55-of-root"
		etcd := testenv.MustEtcd(t)
		enableEtcdAuth(t, etcd, secret)
		dir := t.TempDir()
		pwFile := filepath.Join(dir, "etcd_password")
		writeFile(t, pwFile, secret+"\n")
		// etcd checks a password with bcrypt, which the race detector slows past the default
		// dial timeout.
		checkScrubbed(t, dir, secret, fmt.Sprintf("single_node: true\netcd: {endpoints: [%s], dial_timeout: 30s, username: root, password_file: %s}\n",
			strings.Join(etcd.Endpoints(), ", "), pwFile))
	})
}

// checkScrubbed runs one replica with the configuration head and the leak job, and checks that
// the secret is stored nowhere, not even in part where the stored output is cut.
func checkScrubbed(t *testing.T, dir, secret, head string) {
	t.Helper()
	c := &cluster{t: t, replicas: map[string]*replica{}, path: filepath.Join(dir, "scheduler.yaml")}
	printed, outHead, outTail := leakOutput(secret)
	body := fmt.Sprintf("data_dir: %s\nelection: {prefix: /test/election, ttl: 2s}\nhttp: {addr: \"127.0.0.1:0\"}\n%s%s",
		filepath.Join(dir, "data"), head, fmt.Sprintf(leakJob, secret, outHead, outTail))
	writeFile(t, c.path, body)
	c.cli("migrate")
	r := c.start("a")
	c.wait("a failed run of leak", func() bool { return countStatus(c.history("leak"), scheduler.StatusFailed) >= 1 })
	for _, run := range c.history("leak") {
		if run.Status != scheduler.StatusFailed {
			continue
		}
		if strings.Contains(run.Output+run.Error, secret) {
			t.Fatalf("output %q error %q: the secret is stored", run.Output, run.Error)
		}
		for _, part := range []string{secret[:len(secret)/2], secret[len(secret)-len(secret)/2:]} {
			if strings.Contains(run.Output, part) {
				t.Fatalf("output %q: %q of the secret is stored, at a cut", run.Output, part)
			}
		}
		if want := kinds.Excerpt(strings.ReplaceAll(printed, secret, "[redacted]"), 0); run.Output != want {
			t.Fatalf("output %q, want %q", run.Output, want)
		}
	}
	// The last run status shows may still be running; wait for a finished one.
	c.wait("status showing a scrubbed run", func() bool {
		out := c.cli("status", "--json")
		if strings.Contains(out, secret) {
			t.Fatalf("status --json shows the secret:\n%s", out)
		}
		return strings.Contains(out, "[redacted]")
	})
	if strings.Contains(r.logs.String(), secret) {
		t.Fatalf("the daemon's log shows the secret")
	}
}

// enableEtcdAuth turns authentication on with a root user whose password is password.
func enableEtcdAuth(t *testing.T, etcd *testenv.Etcd, password string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := etcd.Client(t)
	if _, err := cli.UserAdd(ctx, "root", password); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
