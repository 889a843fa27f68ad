package zkelection

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/lease"
	"scheduler/internal/lease/leasetest"
	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	testPath    = "/scheduler/election"
	testTimeout = 2 * time.Second
)

// mustConn returns a session on addr for the test's own reads and writes,
// closed in t.Cleanup.
func mustConn(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, testTimeout, zk.WithLogger(printf{zaptest.NewLogger(t).Sugar()}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	if _, _, err := conn.Exists("/"); err != nil {
		t.Fatalf("zookeeper on %s: %v", addr, err)
	}
	return conn
}

// newCampaigner returns a Campaigner for node on addr.
func newCampaigner(t *testing.T, addr, node string) *Campaigner {
	t.Helper()
	return newCampaignerOn(t, addr, node, testTimeout)
}

// newCampaignerOn returns a Campaigner for node on addr with sessions of
// timeout.
func newCampaignerOn(t *testing.T, addr, node string, timeout time.Duration) *Campaigner {
	t.Helper()
	c, err := New(Config{Servers: []string{addr}, SessionTimeout: timeout, Path: testPath, Node: node}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// contract is the ZooKeeper backend under leasetest's contract tests. The
// test server grants sessions of a few ticks at the most.
var contract = leasetest.Contract{
	Start:        func(t *testing.T) leasetest.Server { return newServer(t) },
	MaxTTL:       testTimeout,
	Elected:      15 * time.Second,
	Handover:     testTimeout / 2,
	Gone:         ReasonKeyDeleted,
	Frozen:       []lease.Reason{ReasonSessionDone},
	NotConfirmed: ErrNotConfirmed,
	NoLeader:     ErrNoLeader,
}

// server is a fresh ZooKeeper server and a session on it.
type server struct {
	srv  *testenv.ZooKeeper
	conn *zk.Conn
}

func newServer(t *testing.T) *server {
	srv := testenv.MustZooKeeper(t)
	return &server{srv: srv, conn: mustConn(t, srv.Addr())}
}

func (s *server) Campaigner(t *testing.T, node string, ttl time.Duration, ev Events) leasetest.Contender {
	c := newCampaignerOn(t, s.srv.Addr(), node, ttl)
	c.cfg.Events = ev
	return c
}

func (s *server) Proxied(t *testing.T, node string, ttl time.Duration) (leasetest.Contender, *testenv.Proxy) {
	proxy := testenv.MustProxy(t, s.srv.Addr())
	return newCampaignerOn(t, proxy.Addr(), node, ttl), proxy
}

// Contending waits for the candidate nodes: a session takes a while.
func (s *server) Contending(t *testing.T, n int) {
	testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, "the candidate nodes", func() bool {
		children, _, err := s.conn.Children(testPath)
		return err == nil && len(candidates(children)) == n
	})
}

// Take deletes the leader's candidate node; Supplant does the same, as the
// next candidate then leads.
func (s *server) Take(t *testing.T) {
	l, err := ReadLeader(s.conn, testPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.conn.Delete(l.Path, -1); err != nil {
		t.Fatal(err)
	}
}

func (s *server) Supplant(t *testing.T) { s.Take(t) }

func (s *server) ReadLeader(*testing.T) error {
	_, err := ReadLeader(s.conn, testPath)
	return err
}

func (s *server) Observer(t *testing.T) leasetest.Observer {
	o, err := NewObserver([]string{s.srv.Addr()}, testTimeout, testPath, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return leasetest.View(o, func(l Leader) scheduler.Term { return scheduler.Term{Token: l.Token, Node: l.Node} })
}
