package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// redisInstallHint tells how to get the server.
const redisInstallHint = "install it with: apt-get install -y redis-server"

// Redis is a throwaway redis-server: a fresh temporary directory, 127.0.0.1
// at a free port, no persistence at all (no RDB snapshots, no AOF), so a
// restart comes back empty, as a server without persistence does.
type Redis struct {
	bin  string
	dir  string
	addr string

	mu   sync.Mutex
	proc *child // nil while stopped
}

// MustRedis starts a redis-server from PATH, stopped and removed in
// tb.Cleanup. A missing binary fails tb with installation instructions.
func MustRedis(tb testing.TB) *Redis {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("testenv: redis-server not found on PATH; %s", redisInstallHint)
	}
	dir, err := os.MkdirTemp("", "testenv-redis-")
	if err != nil {
		tb.Fatalf("testenv: create redis directory: %v", err)
	}
	r := &Redis{bin: bin, dir: dir}
	tb.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.proc != nil {
			if err := r.proc.stop(syscall.SIGTERM, 10*time.Second); err != nil {
				tb.Errorf("testenv: %v", err)
			}
			r.proc = nil
		}
		_ = os.RemoveAll(dir)
	})
	for attempt := 1; ; attempt++ {
		addrs, err := FreePorts(1)
		if err != nil {
			tb.Fatalf("testenv: %v", err)
		}
		r.addr = addrs[0]
		err = r.start()
		if err == nil {
			return r
		}
		if attempt == 3 {
			tb.Fatalf("testenv: %v", err)
		}
	}
}

// Addr returns the server's address, "127.0.0.1:port". It stays the same
// across Restart.
func (r *Redis) Addr() string { return r.addr }

// Restart stops the server and starts it again on the same port: every key
// is gone, as after a restart of a server without persistence.
func (r *Redis) Restart(tb testing.TB) {
	tb.Helper()
	r.mu.Lock()
	proc := r.proc
	r.proc = nil
	r.mu.Unlock()
	if proc == nil {
		tb.Fatalf("testenv: redis on %s is not running", r.addr)
	}
	if err := proc.stop(syscall.SIGTERM, 10*time.Second); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	if err := r.start(); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
}

// start runs the server on r.addr and waits until it answers PING.
func (r *Redis) start() error {
	_, port, err := net.SplitHostPort(r.addr)
	if err != nil {
		return fmt.Errorf("redis address %q: %w", r.addr, err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return fmt.Errorf("redis port %q: %w", port, err)
	}
	proc, err := startChild("redis", r.dir, r.bin,
		"--port", port, "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no")
	if err != nil {
		return fmt.Errorf("%w; %s", err, redisInstallHint)
	}
	if err := proc.waitReady(r.addr, 30*time.Second, func(c net.Conn) error {
		return expectReply(c, "PING\r\n", "+PONG")
	}); err != nil {
		return err
	}
	r.mu.Lock()
	r.proc = proc
	r.mu.Unlock()
	return nil
}
