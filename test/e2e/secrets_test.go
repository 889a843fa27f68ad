package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// unprivileged is the user the scenario runs the daemon as: the README's production setup is a
// dedicated unprivileged user, and root could read any process's memory whatever the daemon does.
const unprivileged = "nobody"

// secretsJobs are exec jobs that try to read the daemon's secrets the ways a job can: its
// environment through /proc by the parent's pid, its memory, and a secret handed to the job.
const secretsJobs = `
  - name: environ-tr
    schedule: "@every 2s"
    type: exec
    command: [sh, -c, 'tr "\0" "\n" </proc/$PPID/environ']
  - name: environ-cat
    schedule: "@every 2s"
    type: exec
    command: [sh, -c, 'pid=$PPID; echo "daemon pid $pid"; cat /proc/$pid/environ']
  - name: memory
    schedule: "@every 2s"
    type: exec
    command: [sh, -c, 'set -e; maps=$(cat /proc/$PPID/maps); start=$(echo "$maps" | head -n 1 | cut -d- -f1); dd if=/proc/$PPID/mem bs=4096 skip=$((0x$start / 4096)) count=64 2>/dev/null | tr -c "[:print:]" "\n" | grep -a . | head -n 2000']
  - name: echoes-secret
    schedule: "@every 2s"
    type: exec
    env: {leaked: %q}
    command: [sh, -c, 'echo "got $leaked"']
`

// jobsCannotReadSecrets runs the daemon as an unprivileged user, with the store's DSN and its
// password in its environment as the systemd unit gives it, and exec jobs (running as that same
// user) that try to read the daemon's environment and memory. None may get the password into
// the ledger: `history --json` and /status must not show it, and the reads must fail. A daemon
// that cannot switch users must refuse a job that sets user.
func (s *suite) jobsCannotReadSecrets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this scenario starts the daemon as %s and so must run as root; it runs as uid %d", unprivileged, os.Geteuid())
	}
	u := mustLookupUser(t, unprivileged)
	secret := "e2e-Secret-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	dsn := testenv.MustPasswordRole(t, s.pg.database(t), "e2e_secret", secret)

	// The daemon's user must reach its binary, configuration and data directory; the test's
	// own temporary directories are private to root.
	dir, err := os.MkdirTemp("", "e2e-secrets-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "scheduler")
	copyFile(t, s.bins.scheduler, bin, 0o755)
	addr := freeAddr(t)
	config := writeSecretsConfig(t, dir, "secrets", addr, fmt.Sprintf(secretsJobs, secret))
	dataDir := filepath.Join(dir, "data-secrets")
	mkdirOwned(t, dataDir, u)
	environ := append(childEnv(), "SCHEDULER_STORE_DSN="+dsn)

	runCLIWith(t, bin, environ, "migrate", "--config", config)
	daemon := startAs(t, "secrets", filepath.Join(dir, "secrets.log"), u, environ, bin, "run", "--config", config)
	t.Logf("daemon pid %d runs as %s (uid %d)", daemon.pid(), unprivileged, u.Uid)

	runs := finishedRuns(t, daemon, bin, environ, config, secret, "environ-tr", "environ-cat", "memory", "echoes-secret")
	for _, j := range []string{"environ-tr", "environ-cat", "memory"} {
		r := runs[j]
		if r["status"] != "failed" {
			t.Errorf("job %s read the daemon's /proc files: status %v, output %q", j, r["status"], r["output"])
		}
		t.Logf("%s: %v: %v: %q", j, r["status"], r["error"], r["output"])
	}
	for _, j := range []string{"environ-tr", "environ-cat"} {
		if out, _ := runs[j]["output"].(string); !strings.Contains(out, "Permission denied") {
			t.Errorf("job %s: output %q, want the read refused with Permission denied", j, out)
		}
	}
	if r := runs["echoes-secret"]; r["status"] != "succeeded" || r["output"] != "got [redacted]\n" {
		t.Errorf("echoes-secret: status %v output %q, want succeeded with the secret [redacted]", r["status"], r["output"])
	}

	// The last run /status shows may still be running; look until one finished.
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		status := httpGet(t, "http://"+addr+"/status")
		if strings.Contains(status, secret) {
			t.Fatalf("/status shows the store password:\n%s", status)
		}
		if strings.Contains(status, "[redacted]") {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("/status shows no scrubbed output of echoes-secret within 30s:\n%s", status)
		}
	}
	if b, err := os.ReadFile(daemon.log); err != nil || strings.Contains(string(b), secret) {
		t.Errorf("the daemon's log is unreadable (%v) or shows the store password", err)
	}
	daemon.kill()

	// An unprivileged daemon cannot run a job as another user: it says so at start and exits.
	refusing := writeSecretsConfig(t, dir, "refuses", "", `
  - name: as-root
    schedule: "@every 1h"
    type: exec
    command: [/bin/true]
    user: root
`)
	mkdirOwned(t, filepath.Join(dir, "data-refuses"), u)
	p := startAs(t, "refuses", filepath.Join(dir, "refuses.log"), u, environ, bin, "run", "--config", refusing)
	code, err := p.wait(60 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	log := p.tail(20)
	if code != 1 || !strings.Contains(log, `job "as-root": user: the daemon cannot switch users`) {
		t.Errorf("exit %d, want 1 with the job and key named; log:\n%s", code, log)
	}
}

// finishedRuns polls `history --json` of each of jobs until each has a finished run (succeeded
// or failed), within 60s, and returns that run of each. Every history it reads must not show
// secret; the daemon must not exit meanwhile.
func finishedRuns(t *testing.T, daemon *process, bin string, environ []string, config, secret string, jobs ...string) map[string]map[string]any {
	t.Helper()
	runs := map[string]map[string]any{}
	deadline := time.Now().Add(60 * time.Second)
	for len(runs) < len(jobs) {
		if time.Now().After(deadline) {
			t.Fatalf("not every job finished a run within 60s (done: %v); daemon log:\n%s", keys(runs), daemon.tail(40))
		}
		if daemon.exited() {
			t.Fatalf("the daemon exited; log:\n%s", daemon.tail(40))
		}
		for _, j := range jobs {
			if _, done := runs[j]; done {
				continue
			}
			out := runCLIWith(t, bin, environ, "history", j, "--json", "--config", config)
			if strings.Contains(out, secret) {
				t.Errorf("history %s --json shows the store password:\n%s", j, out)
			}
			var hist []map[string]any
			if err := json.Unmarshal([]byte(out), &hist); err != nil {
				t.Fatalf("history %s --json: %v\n%s", j, err, out)
			}
			for _, r := range hist {
				if st := r["status"]; st == "succeeded" || st == "failed" {
					runs[j] = r
					break
				}
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return runs
}

// writeSecretsConfig writes a configuration with an embedded etcd in dir/data-NODE and the
// store from the environment, readable by the daemon's user.
func writeSecretsConfig(t *testing.T, dir, node, addr, jobs string) string {
	t.Helper()
	body := fmt.Sprintf(`node: %s
data_dir: %s
election: {prefix: /e2e/%s/election, ttl: %s}
http: {addr: %q}
log: {level: info, format: json}
shutdown_grace: 2s
jobs:%s`, node, filepath.Join(dir, "data-"+node), node, ttl, addr, jobs)
	path := filepath.Join(dir, node+".yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startAs starts bin as the user u, like startProcess, with environ.
func startAs(t *testing.T, name, logPath string, u osUser, environ []string, bin string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(environ, "HOME=/", "USER="+u.Name, "LOGNAME="+u.Name)
	cmd.Dir = filepath.Dir(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL,
		Credential: &syscall.Credential{Uid: u.Uid, Gid: u.Gid, Groups: []uint32{}}}
	return launch(t, name+" as "+u.Name, logPath, cmd)
}

// osUser is a user's name and ids.
type osUser struct {
	Name     string
	Uid, Gid uint32
}

func mustLookupUser(t *testing.T, name string) osUser {
	t.Helper()
	out, err := exec.Command("id", "-u", name).Output()
	if err != nil {
		t.Fatalf("user %s: %v", name, err)
	}
	gout, err := exec.Command("id", "-g", name).Output()
	if err != nil {
		t.Fatalf("user %s: %v", name, err)
	}
	uid, err1 := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 32)
	gid, err2 := strconv.ParseUint(strings.TrimSpace(string(gout)), 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("user %s: ids %q %q", name, out, gout)
	}
	return osUser{Name: name, Uid: uint32(uid), Gid: uint32(gid)}
}

func mkdirOwned(t *testing.T, dir string, u osUser) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, int(u.Uid), int(u.Gid)); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// jobUserCannotReadSecretFiles runs the daemon as root with the store's DSN in a file only root
// may read, as systemd's LoadCredential= hands it over, and exec jobs under `user: nobody` that
// try to read that file and the daemon's environment: both reads fail. A job without `user`
// reads the file, as the daemon's user may, and the DSN it prints is stored [redacted].
func (s *suite) jobUserCannotReadSecretFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this scenario runs the daemon as root so that it can run jobs as %s; it runs as uid %d", unprivileged, os.Geteuid())
	}
	secret := "e2e-File-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	dsn := testenv.MustPasswordRole(t, s.pg.database(t), "e2e_secret", secret)
	dir := t.TempDir()
	dsnFile := filepath.Join(dir, "store_dsn")
	if err := os.WriteFile(dsnFile, []byte(dsn+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	config := writeSecretsConfig(t, dir, "files", addr, fmt.Sprintf(`
  - name: file-as-nobody
    schedule: "@every 2s"
    type: exec
    user: %[2]s
    command: [cat, %[1]s]
  - name: environ-as-nobody
    schedule: "@every 2s"
    type: exec
    user: %[2]s
    command: [sh, -c, 'tr "\0" "\n" </proc/$PPID/environ']
  - name: file-as-daemon
    schedule: "@every 2s"
    type: exec
    command: [cat, %[1]s]
`, dsnFile, unprivileged))
	environ := append(childEnv(), "SCHEDULER_STORE_DSN_FILE="+dsnFile)
	runCLIWith(t, s.bins.scheduler, environ, "migrate", "--config", config)
	daemon := startAs(t, "files", filepath.Join(dir, "files.log"), osUser{Name: "root"}, environ, s.bins.scheduler, "run", "--config", config)

	want := map[string]string{"file-as-nobody": "failed", "environ-as-nobody": "failed", "file-as-daemon": "succeeded"}
	runs := finishedRuns(t, daemon, s.bins.scheduler, environ, config, secret, slices.Collect(maps.Keys(want))...)
	for j, st := range want {
		r := runs[j]
		t.Logf("%s: %v: %v: %q", j, r["status"], r["error"], r["output"])
		if r["status"] != st {
			t.Errorf("job %s: status %v, want %s; output %q", j, r["status"], st, r["output"])
		}
	}
	for _, j := range []string{"file-as-nobody", "environ-as-nobody"} {
		if out, _ := runs[j]["output"].(string); !strings.Contains(out, "Permission denied") {
			t.Errorf("job %s: output %q, want the read refused with Permission denied", j, out)
		}
	}
	if out, _ := runs["file-as-daemon"]["output"].(string); out != "[redacted]\n" {
		t.Errorf("file-as-daemon: output %q, want the DSN it read [redacted]", out)
	}
	if status := httpGet(t, "http://"+addr+"/status"); strings.Contains(status, secret) {
		t.Errorf("/status shows the store password:\n%s", status)
	}
}
