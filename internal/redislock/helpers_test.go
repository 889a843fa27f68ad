package redislock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/lease/leasetest"
	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// mustClient returns a client of addr, closed in t.Cleanup. Its timeouts are
// short, so that requests to a paused server fail within a renewal.
func mustClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	cli := redis.NewClient(&redis.Options{
		Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		MaxRetries: -1, ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// newCampaigner returns a Campaigner for node on cli with TTL ttl and floor.
func newCampaigner(t *testing.T, cli redis.UniversalClient, node string, ttl time.Duration, floor func(context.Context) (int64, error)) *Campaigner {
	t.Helper()
	c, err := New(cli, Config{Key: testKey, Node: node, TTL: ttl, Floor: floor}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// contract is the Redis backend under leasetest's contract tests.
var contract = leasetest.Contract{
	Start:        func(t *testing.T) leasetest.Server { return newServer(t) },
	NotConfirmed: ErrNotConfirmed,
	NoLeader:     ErrNoLeader,
}

// testKey is the lock's key in the tests.
const testKey = "scheduler:leader"

// server is a fresh Redis server and a client of it.
type server struct {
	srv *testenv.Redis
	cli *redis.Client
}

func newServer(t *testing.T) *server {
	srv := testenv.MustRedis(t)
	return &server{srv: srv, cli: mustClient(t, srv.Addr())}
}

func (s *server) Campaigner(t *testing.T, node string, ttl time.Duration, ev Events) leasetest.Contender {
	c := newCampaigner(t, s.cli, node, ttl, nil)
	c.cfg.Events = ev
	return c
}

func (s *server) Proxied(t *testing.T, node string, ttl time.Duration) (leasetest.Contender, *testenv.Proxy) {
	proxy := testenv.MustProxy(t, s.srv.Addr())
	return newCampaigner(t, mustClient(t, proxy.Addr()), node, ttl, nil), proxy
}

// Contending waits a moment: a follower's first attempt comes at once.
func (s *server) Contending(*testing.T, int) { time.Sleep(300 * time.Millisecond) }

func (s *server) Take(t *testing.T) {
	if err := s.cli.Del(context.Background(), testKey).Err(); err != nil {
		t.Fatal(err)
	}
}

func (s *server) Supplant(t *testing.T) {
	ctx := context.Background()
	l, err := ReadLeader(ctx, s.cli, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cli.Set(ctx, testKey, lockValue(l.Token+1, "x", "b"), 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func (s *server) ReadLeader(*testing.T) error {
	_, err := ReadLeader(context.Background(), s.cli, testKey)
	return err
}

func (s *server) Observer(t *testing.T) leasetest.Observer {
	o, err := NewObserver(s.cli, testKey, time.Second, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return leasetest.View(o, func(l Leader) scheduler.Term { return scheduler.Term{Token: l.Token, Node: l.Node} })
}
