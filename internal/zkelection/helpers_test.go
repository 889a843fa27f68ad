package zkelection

import (
	"context"
	"sync/atomic"
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

// event is a term starting or ending, numbered in the order seen by the
// test across every campaigner that shares the counter.
type event struct {
	term  Term
	seq   int64
	cause error
}

// campaign runs c in the background until stop is called or the test ends.
type campaign struct {
	won, lost chan event
	cancel    context.CancelFunc
	done      chan struct{}
}

// runCampaign starts c.Run with a lead that records its terms on seq and,
// when hold is set, leads until its context ends; else it returns at once.
func runCampaign(t *testing.T, c *Campaigner, seq *atomic.Int64, hold bool) *campaign {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &campaign{won: make(chan event, 64), lost: make(chan event, 64), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		err := c.Run(ctx, func(ctx context.Context, term Term) error {
			r.won <- event{term: term, seq: seq.Add(1)}
			if hold {
				<-ctx.Done()
			}
			r.lost <- event{term: term, seq: seq.Add(1), cause: context.Cause(ctx)}
			return nil
		})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(r.stop)
	return r
}

// stop cancels the campaign and waits for Run to return.
func (r *campaign) stop() {
	r.cancel()
	<-r.done
}

// next returns the next event from ch, failing t after within.
func next(t *testing.T, ch <-chan event, within time.Duration, what string) event {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(within):
		t.Fatalf("no %s within %v", what, within)
		return event{}
	}
}
