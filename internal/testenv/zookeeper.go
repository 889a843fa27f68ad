package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

const (
	// zkInstallHint tells how to get the server.
	zkInstallHint = "install it with: apt-get install -y zookeeper"
	// zkJar is where Debian's zookeeper package puts the server; its
	// manifest names the jars it depends on.
	zkJar = "/usr/share/java/zookeeper.jar"
	// ZooKeeperTick is the tick of MustZooKeeper's server. ZooKeeper grants
	// session timeouts between 2 and 20 ticks: 400 ms to 4 s.
	ZooKeeperTick = 200 * time.Millisecond
)

// ZooKeeper is a throwaway standalone ZooKeeper server: its own data
// directory in a fresh temporary directory, 127.0.0.1 at a free port, the
// admin web server off.
type ZooKeeper struct {
	addr string
	proc *child
}

// MustZooKeeper starts a standalone ZooKeeper server (Debian's zookeeper
// package, run with java from PATH) with tick ZooKeeperTick, stopped and
// removed in tb.Cleanup. Missing binaries fail tb with installation
// instructions.
func MustZooKeeper(tb testing.TB) *ZooKeeper {
	tb.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		tb.Fatalf("testenv: java not found on PATH; %s", zkInstallHint)
	}
	if _, err := os.Stat(zkJar); err != nil {
		tb.Fatalf("testenv: %s not found; %s", zkJar, zkInstallHint)
	}
	dir, err := os.MkdirTemp("", "testenv-zk-")
	if err != nil {
		tb.Fatalf("testenv: create zookeeper directory: %v", err)
	}
	z := &ZooKeeper{}
	tb.Cleanup(func() {
		if z.proc != nil {
			if err := z.proc.stop(syscall.SIGTERM, 10*time.Second); err != nil {
				tb.Errorf("testenv: %v", err)
			}
		}
		_ = os.RemoveAll(dir)
	})
	for attempt := 1; ; attempt++ {
		addrs, err := FreePorts(1)
		if err != nil {
			tb.Fatalf("testenv: %v", err)
		}
		_, port, _ := net.SplitHostPort(addrs[0])
		proc, err := startChild("zookeeper", dir, java,
			"-Xmx256m", "-Dzookeeper.admin.enableServer=false", "-Dzookeeper.4lw.commands.whitelist=srvr",
			"-cp", zkJar, "org.apache.zookeeper.server.ZooKeeperServerMain",
			port, filepath.Join(dir, "data-"+strconv.Itoa(attempt)), strconv.Itoa(int(ZooKeeperTick.Milliseconds())))
		if err != nil {
			tb.Fatalf("testenv: %v; %s", err, zkInstallHint)
		}
		err = proc.waitReady(addrs[0], 60*time.Second, func(c net.Conn) error {
			return expectReply(c, "srvr", "Zookeeper version")
		})
		if err == nil {
			z.addr, z.proc = addrs[0], proc
			return z
		}
		if attempt == 3 {
			tb.Fatalf("testenv: %v", fmt.Errorf("start zookeeper: %w", err))
		}
	}
}

// Addr returns the server's client address, "127.0.0.1:port".
func (z *ZooKeeper) Addr() string { return z.addr }
