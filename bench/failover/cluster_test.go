package failover

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logLine is one line of a replica's JSON log, as far as the benchmark reads it.
type logLine struct {
	TS    time.Time `json:"ts"`
	Msg   string    `json:"msg"`
	Name  string    `json:"logger"`
	Node  string    `json:"node"`
	Token int64     `json:"token"`
	Job   string    `json:"job"`
	Slot  time.Time `json:"slot"`
}

// replica is one `scheduler run` process, in a process group of its own.
type replica struct {
	name, config, log string
	cmd               *exec.Cmd
	done              chan struct{}
}

// cluster runs replicas of the binary and reads their logs.
type cluster struct {
	tb       testing.TB
	bin, dir string
	mu       sync.Mutex
	replicas map[string]*replica
}

func newCluster(tb testing.TB, bin string) *cluster {
	c := &cluster{tb: tb, bin: bin, dir: tb.TempDir(), replicas: map[string]*replica{}}
	tb.Cleanup(c.killAll)
	return c
}

// config writes the configuration of replica name: etcd at endpoint, the ledger at dsn, and one
// job due every second that runs /bin/true.
func (c *cluster) config(name, endpoint, dsn, prefix, job string, ttl time.Duration) string {
	path := filepath.Join(c.dir, name+".yaml")
	cfg := fmt.Sprintf(`node: %s
data_dir: %s
etcd:
  endpoints: [%q]
  dial_timeout: 2s
election:
  prefix: %s
  ttl: %s
store:
  dsn: %q
http:
  addr: ""
log: {level: info, format: json}
shutdown_grace: 2s
jobs:
  - name: %s
    schedule: "* * * * * *"
    type: exec
    command: ["/bin/true"]
    timeout: 10s
    overlap: skip
    misfire: once
    catchup: 1m
`, name, filepath.Join(c.dir, name), endpoint, prefix, ttl, dsn, job)
	if err := os.MkdirAll(filepath.Join(c.dir, name), 0o755); err != nil {
		c.tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		c.tb.Fatal(err)
	}
	return path
}

// migrate applies the migrations with config.
func (c *cluster) migrate(config string) {
	out, err := exec.Command(c.bin, "migrate", "--config", config).CombinedOutput()
	if err != nil {
		c.tb.Fatalf("migrate: %v\n%s", err, out)
	}
}

// start starts (or restarts) replica name with config; its log is appended to.
func (c *cluster) start(name, config string) *replica {
	r := &replica{name: name, config: config, log: filepath.Join(c.dir, name+".log"), done: make(chan struct{})}
	f, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.tb.Fatal(err)
	}
	r.cmd = exec.Command(c.bin, "run", "--config", config, "--node", name)
	r.cmd.Stdout, r.cmd.Stderr = f, f
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		c.tb.Fatal(err)
	}
	go func() {
		_ = r.cmd.Wait()
		_ = f.Close()
		close(r.done)
	}()
	c.mu.Lock()
	c.replicas[name] = r
	c.mu.Unlock()
	return r
}

// signal sends sig to replica name's process group (SIGKILL) or process (others) and returns
// the time it was sent.
func (c *cluster) signal(name string, sig syscall.Signal) time.Time {
	c.mu.Lock()
	r := c.replicas[name]
	c.mu.Unlock()
	pid := r.cmd.Process.Pid
	if sig == syscall.SIGKILL {
		pid = -pid
	}
	at := time.Now()
	if err := syscall.Kill(pid, sig); err != nil {
		c.tb.Fatalf("signal %s: %v", name, err)
	}
	return at
}

// wait waits for replica name's process to exit.
func (c *cluster) wait(name string) {
	c.mu.Lock()
	r := c.replicas[name]
	c.mu.Unlock()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		c.tb.Fatalf("replica %s did not exit", name)
	}
}

func (c *cluster) killAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.replicas {
		select {
		case <-r.done:
		default:
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
			<-r.done
		}
	}
}

// lines returns replica name's log lines with message msg logged at or after since.
func (c *cluster) lines(name, msg string, since time.Time) []logLine {
	f, err := os.Open(filepath.Join(c.dir, name+".log"))
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b := sc.Bytes()
		if !strings.Contains(string(b), `"msg":"`+msg+`"`) {
			continue
		}
		var l logLine
		if json.Unmarshal(b, &l) == nil && l.Msg == msg && !l.TS.Before(since) {
			out = append(out, l)
		}
	}
	return out
}

// await polls until find returns a line or the bound passes.
func (c *cluster) await(what string, bound time.Duration, find func() (logLine, bool)) logLine {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for {
		if l, ok := find(); ok {
			return l
		}
		select {
		case <-ctx.Done():
			c.tb.Fatalf("timed out waiting for %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// first returns the earliest line with msg at or after since among replicas names that
// satisfies keep.
func (c *cluster) first(names []string, msg string, since time.Time, keep func(logLine) bool) (logLine, bool) {
	var best logLine
	found := false
	for _, n := range names {
		for _, l := range c.lines(n, msg, since) {
			if keep(l) && (!found || l.TS.Before(best.TS)) {
				best, found = l, true
			}
		}
	}
	return best, found
}

// rewrite replaces the configuration at path with edit's result and returns path.
func (c *cluster) rewrite(path string, edit func(string) string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		c.tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(edit(string(b))), 0o644); err != nil {
		c.tb.Fatal(err)
	}
	return path
}
