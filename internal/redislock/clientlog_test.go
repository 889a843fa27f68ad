package redislock

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// The client library's dial failures reach the structured log, not stderr.
func TestClientLogs(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	ClientLogs(zap.New(core))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil && logs.Len() == 0 {
		_ = c.Ping(ctx).Err()
	}
	for _, e := range logs.All() {
		if e.LoggerName == "redis-client" && e.Level == zap.DebugLevel && strings.Contains(e.Message, addr) {
			return
		}
	}
	t.Fatalf("no debug line of the client naming %s: %v", addr, logs.All())
}
