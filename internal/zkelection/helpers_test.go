package zkelection

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap/zaptest"

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
	c, err := New(Config{Servers: []string{addr}, SessionTimeout: testTimeout, Path: testPath, Node: node}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
