package redislock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

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
	c, err := New(cli, Config{Key: "scheduler:leader", Node: node, TTL: ttl, Floor: floor}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
