package testenv

import (
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

const (
	// etcdReadyTimeout bounds how long a member may take to join a cluster
	// that has a leader.
	etcdReadyTimeout = 30 * time.Second
	// etcdStartAttempts is how often a cluster start is retried when a
	// pre-picked port was taken by someone else in the meantime.
	etcdStartAttempts = 3
	// leaderTimeout bounds LeaderIndex.
	leaderTimeout = 15 * time.Second
)

// Etcd is a set of embedded etcd members running in this process, on
// loopback ports, with test timing (10 ms ticks, 100 ms election timeout,
// hence a 1 s minimum lease TTL). Members can be stopped and restarted on the
// same data directory and ports to simulate member loss.
type Etcd struct {
	mu      sync.Mutex
	members []*etcdMember
}

// MustEtcd starts one embedded member on random loopback ports and stops it
// in tb.Cleanup. Clients created with Client or ClientFor are closed before
// that; close any other client before the test ends, or the cleanup waits
// about 5 s for the streams it keeps open.
func MustEtcd(tb testing.TB) *Etcd {
	tb.Helper()
	// Port 0 works for a single member: nobody needs its peer URL up front.
	// The ports it got are read back after start so Restart can reuse them.
	m := &etcdMember{
		name:   "m0",
		dir:    filepath.Join(tb.TempDir(), "m0"),
		client: url.URL{Scheme: "http", Host: "127.0.0.1:0"},
		peer:   url.URL{Scheme: "http", Host: "127.0.0.1:0"},
	}
	m.cluster = m.name + "=" + m.peer.String()
	e := &Etcd{members: []*etcdMember{m}}
	tb.Cleanup(e.stopAll)
	if err := startMembers(e.members); err != nil {
		tb.Fatalf("testenv: start etcd: %v", err)
	}
	m.client.Host = m.server.Clients[0].Addr().String()
	m.peer.Host = m.server.Peers[0].Addr().String()
	return e
}

// MustEtcdCluster starts an n-member cluster in this process on pre-picked
// free loopback ports, starting the members concurrently and waiting until
// each has joined a cluster with a leader. The members are stopped in
// tb.Cleanup.
func MustEtcdCluster(tb testing.TB, n int) *Etcd {
	tb.Helper()
	if n < 1 {
		tb.Fatalf("testenv: etcd cluster of %d members, want at least 1", n)
	}
	root := tb.TempDir()
	e := &Etcd{}
	tb.Cleanup(e.stopAll)
	var err error
	// A port picked by listening on :0 and closing again can be taken by
	// another process before etcd binds it; start again on fresh ports then.
	for attempt := 1; attempt <= etcdStartAttempts; attempt++ {
		var members []*etcdMember
		members, err = newClusterMembers(filepath.Join(root, fmt.Sprintf("attempt%d", attempt)), n)
		if err != nil {
			break
		}
		e.mu.Lock()
		e.members = members
		e.mu.Unlock()
		if err = startMembers(members); err == nil {
			return e
		}
		e.stopAll()
		if !isAddrInUse(err) {
			break
		}
	}
	tb.Fatalf("testenv: start etcd cluster of %d members: %v", n, err)
	return nil
}

// stopAll stops all running members and waits until they are closed.
func (e *Etcd) stopAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range e.members {
		m.halt()
	}
	for _, m := range e.members {
		m.wait()
	}
}

// member returns member i or fails tb. e.mu must be held and released by a
// deferred call, so failing tb does not leave it locked.
func (e *Etcd) member(tb testing.TB, i int) *etcdMember {
	tb.Helper()
	if i < 0 || i >= len(e.members) {
		tb.Fatalf("testenv: etcd member %d of %d", i, len(e.members))
	}
	return e.members[i]
}

// endpoint returns the client address of member i or fails tb.
func (e *Etcd) endpoint(tb testing.TB, i int) string {
	tb.Helper()
	e.mu.Lock()
	defer e.mu.Unlock() // also when member fails tb
	return e.member(tb, i).client.Host
}

// Endpoints returns the client addresses ("127.0.0.1:port") of all members,
// running or not.
func (e *Etcd) Endpoints() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	eps := make([]string, len(e.members))
	for i, m := range e.members {
		eps[i] = m.client.Host
	}
	return eps
}

// Endpoint returns the client address ("127.0.0.1:port") of member i.
func (e *Etcd) Endpoint(i int) string {
	return e.Endpoints()[i]
}

// Member returns the embedded server of member i, or nil while it is
// stopped.
func (e *Etcd) Member(i int) *embed.Etcd {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.members[i].server
}

// Client returns a client for all endpoints, closed in tb.Cleanup.
func (e *Etcd) Client(tb testing.TB) *clientv3.Client {
	tb.Helper()
	return newClient(tb, e.Endpoints()...)
}

// ClientFor returns a client pinned to member i, closed in tb.Cleanup.
func (e *Etcd) ClientFor(tb testing.TB, i int) *clientv3.Client {
	tb.Helper()
	return newClient(tb, e.endpoint(tb, i))
}

func newClient(tb testing.TB, endpoints ...string) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(ClientConfig(endpoints...))
	if err != nil {
		tb.Fatalf("testenv: etcd client for %v: %v", endpoints, err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Stop stops member i at once, without handing over leadership, as if it
// crashed: Member(i) is nil and the member takes no part in raft when Stop
// returns. Client streams still open on it are cut within about 5 s. Its
// data directory and ports are kept for Restart.
func (e *Etcd) Stop(tb testing.TB, i int) {
	tb.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.member(tb, i)
	if m.server == nil {
		tb.Fatalf("testenv: etcd member %d is already stopped", i)
	}
	m.halt()
}

// Restart starts the stopped member i again on the same data directory and
// ports and waits until it is ready (for a cluster: has a leader). It first
// waits until the stopped server has released its ports, up to about 5 s
// while clients kept streams open on it.
func (e *Etcd) Restart(tb testing.TB, i int) {
	tb.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.member(tb, i)
	if m.server != nil {
		tb.Fatalf("testenv: etcd member %d is running", i)
	}
	m.wait() // the ports are free once the old server is closed
	if err := m.start(nil); err != nil {
		tb.Fatalf("testenv: restart etcd: %v", err)
	}
}

// LeaderIndex returns the index of the member that is raft leader now: a
// running member that a quorum of the cluster reports as leader. It waits up
// to 15 s for one to emerge, then fails tb.
func (e *Etcd) LeaderIndex(tb testing.TB) int {
	tb.Helper()
	deadline := time.Now().Add(leaderTimeout)
	for {
		if i := e.leader(); i >= 0 {
			return i
		}
		if time.Now().After(deadline) {
			tb.Fatalf("testenv: no etcd leader after %v", leaderTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leader returns the index of the running member that a quorum reports as
// leader, or -1. Requiring a quorum skips the stale view of a member that
// has not yet noticed a leader change.
func (e *Etcd) leader() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	votes := make(map[uint64]int)
	for _, m := range e.members {
		if m.server != nil {
			votes[m.server.Server.Lead()]++
		}
	}
	for i, m := range e.members {
		if m.server == nil {
			continue
		}
		if votes[uint64(m.server.Server.MemberID())] > len(e.members)/2 {
			return i
		}
	}
	return -1
}

// ClientConfig returns a client configuration for endpoints with test
// settings: 2 s dial timeout, 5 s keepalive time, 2 s keepalive timeout and
// a logger that discards everything.
func ClientConfig(endpoints ...string) clientv3.Config {
	return clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          2 * time.Second,
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
	}
}
