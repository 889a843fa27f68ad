// Package testenv starts real services for tests: embedded etcd members on
// random loopback ports, throwaway PostgreSQL clusters, a standalone
// ZooKeeper server, a redis-server without persistence and a pausable TCP
// proxy for partitions. Everything listens on loopback only and is stopped
// when the test (or, for the shared Postgres cluster, the test binary) ends,
// pass or fail. It also builds the module's commands for tests that run them
// (MustBuild), serves the connections of a test's stand-in server (Serve),
// picks free loopback ports for servers started elsewhere (FreePorts) and
// waits for a state the test cannot be told about (Eventually). It is
// imported only from _test.go files.
//
// A package that uses it, or starts goroutines, runs its tests through Main:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
package testenv

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// process holds what lives for the whole test binary: whether Main runs the
// tests, and the shared Postgres cluster behind MustDatabase. It is the one
// piece of package-level state, because a cluster shared by every test of a
// binary can only be owned by the binary's TestMain.
var process struct {
	mu       sync.Mutex
	main     bool      // Main is running the tests
	pg       *Postgres // shared cluster, nil until first used
	pgErr    error     // why the shared cluster could not start
	pgClosed bool      // Main stopped the shared cluster
}

// Main runs the package's tests, stops the shared Postgres cluster if one
// was started, checks for leaked goroutines with goleak (opts are passed on,
// e.g. goleak.IgnoreTopFunction) and exits. Use it as the package's
// TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M, opts ...goleak.Option) {
	process.mu.Lock()
	process.main = true
	process.mu.Unlock()

	code := m.Run()

	if err := stopShared(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stop shared postgres: %v\n", err)
		code = 1
	}
	if code == 0 {
		if err := findLeaks(append(opts, etcdLeftovers...)...); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: goroutines leaked after all tests passed: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// etcdLeftovers are goroutines that belong to etcd members a test stopped,
// not to the code under test: a peer's /version request that reaches a member
// while it stops can stay blocked on the closed backend inside etcd's HTTP
// handler.
var etcdLeftovers = []goleak.Option{
	goleak.IgnoreAnyFunction("go.etcd.io/etcd/server/v3/etcdserver.(*EtcdServer).StorageVersion"),
}

// leakSettle is how long goroutines get to finish after the tests. A
// stopped etcd member's peer connections linger until rafthttp's 5 s read
// timeout: the server's peer round tripper keeps idle keep-alive connections
// that nothing closes, and the member's side of them waits in a read whose
// deadline the timeout listener keeps resetting. They end by themselves.
const leakSettle = 10 * time.Second

// findLeaks runs goleak.Find (which itself retries for about a second) until
// it finds no leak or leakSettle has passed.
func findLeaks(opts ...goleak.Option) error {
	deadline := time.Now().Add(leakSettle)
	for {
		err := goleak.Find(opts...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
	}
}

// MustDatabase returns the DSN of a fresh database on a Postgres cluster
// shared by every test of the binary. The cluster starts on first use (with
// fsync=off) and is stopped by Main; the database is dropped in tb.Cleanup.
// It fails tb when Main is not the package's TestMain. Safe for parallel
// tests.
func MustDatabase(tb testing.TB) string {
	tb.Helper()
	p, err := sharedPostgres()
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return p.CreateDatabase(tb)
}

// sharedPostgres returns the shared cluster, starting it on first use.
func sharedPostgres() (*Postgres, error) {
	process.mu.Lock()
	defer process.mu.Unlock()
	switch {
	case !process.main:
		return nil, fmt.Errorf("MustDatabase needs the package's TestMain to be: func TestMain(m *testing.M) { testenv.Main(m) }")
	case process.pgClosed:
		return nil, fmt.Errorf("shared postgres already stopped: MustDatabase called after all tests finished")
	case process.pg != nil || process.pgErr != nil:
		return process.pg, process.pgErr
	}
	process.pg, process.pgErr = startPostgres("fsync=off", "synchronous_commit=off", "full_page_writes=off")
	if process.pgErr != nil {
		process.pgErr = fmt.Errorf("start shared postgres: %w", process.pgErr)
	} else {
		process.pg.dropDBs = true
	}
	return process.pg, process.pgErr
}

// stopShared stops and removes the shared cluster if it was started.
func stopShared() error {
	process.mu.Lock()
	defer process.mu.Unlock()
	process.pgClosed = true
	if process.pg == nil {
		return nil
	}
	err := process.pg.destroy()
	process.pg = nil
	return err
}
