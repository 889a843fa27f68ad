package redislock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The lock's value is "<token> <holder> <node>": the holder ID makes every
// term's value unique, so that the compare-and-set scripts below can tell
// this term from a later one of the same node, and observers read the
// token and the node from it.

// renewScript extends the lock only while it holds our value. KEYS: lock.
// ARGV: value, TTL in ms.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)

// releaseScript deletes the lock only while it holds our value, and wakes
// the followers. KEYS: lock. ARGV: value, channel.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], 'released')
  return 1
end
return 0
`)

// counterKey is where the token counter lives.
func counterKey(key string) string { return key + ":token" }

// eventsChannel is where grants and releases are published.
func eventsChannel(key string) string { return key + ":events" }

// lockValue is the value of a lock held by holder on node with token.
func lockValue(token int64, holder, node string) string {
	return fmt.Sprintf("%d %s %s", token, holder, node)
}

// renewFor returns the renewal of the lock holding value.
func (c *Campaigner) renewFor(value string) func(context.Context) error {
	return func(ctx context.Context) error {
		n, err := renewScript.Run(ctx, c.cli, []string{c.cfg.Key}, value, c.cfg.TTL.Milliseconds()).Int64()
		switch {
		case err != nil:
			return fmt.Errorf("renew lock %s: %w", c.cfg.Key, err)
		case n == 0:
			return fmt.Errorf("renew lock %s: %w", c.cfg.Key, errGone)
		}
		return nil
	}
}

// release deletes the lock holding value and wakes the followers, so that
// the next one takes over at once instead of after the TTL.
func (c *Campaigner) release(ctx context.Context, value string) error {
	if err := releaseScript.Run(ctx, c.cli, []string{c.cfg.Key}, value, eventsChannel(c.cfg.Key)).Err(); err != nil {
		return fmt.Errorf("release lock %s: %w", c.cfg.Key, err)
	}
	return nil
}

// ErrNoLeader is returned by ReadLeader when nobody holds the lock.
var ErrNoLeader = errors.New("redislock: no leader")

// Leader is who holds the lock, as read from Redis.
type Leader struct {
	// Node is the holder's replica name.
	Node string
	// Token is the holder's fencing token.
	Token int64
	// Remaining is how long the lock runs unless renewed.
	Remaining time.Duration
}

// ReadLeader reads who holds the lock at key right now. It returns
// ErrNoLeader when nobody does, and an error for a value no campaigner
// writes (a key set by hand).
func ReadLeader(ctx context.Context, cli redis.UniversalClient, key string) (Leader, error) {
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := cli.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, key)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	if errors.Is(err, redis.Nil) {
		return Leader{}, ErrNoLeader
	}
	if err != nil {
		return Leader{}, fmt.Errorf("read lock %s: %w", key, err)
	}
	parts := strings.SplitN(get.Val(), " ", 3)
	tok, perr := strconv.ParseInt(parts[0], 10, 64)
	if len(parts) != 3 || perr != nil {
		return Leader{}, fmt.Errorf("read lock %s: value %.40q was not written by a campaigner", key, get.Val())
	}
	return Leader{Node: parts[2], Token: tok, Remaining: max(pttl.Val(), 0)}, nil
}
