package redislock

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	// Problems describe what in the lock or the counter keeps the election
	// from working, each with its remedy; ReadLeader sets them also when it
	// returns ErrNoLeader.
	Problems []string
}

// ReadLeader reads who holds the lock at key right now. It returns
// ErrNoLeader when nobody does: a lock no campaigner could have written (a
// value of another shape) is no leader, and a problem.
func ReadLeader(ctx context.Context, cli redis.UniversalClient, key string) (Leader, error) {
	var (
		get, counter *redis.StringCmd
		pttl         *redis.DurationCmd
	)
	_, _ = cli.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, key)
		pttl = p.PTTL(ctx, key)
		counter = p.Get(ctx, counterKey(key))
		return nil
	})
	var l Leader
	if counter.Val() == strconv.FormatInt(math.MaxInt64, 10) {
		l.Problems = append(l.Problems, fmt.Sprintf("the token counter %s holds the largest token there is: no replica can "+
			"take the lock; set it back to the store's highest fence with: redis-cli SET %s <fence>", counterKey(key), counterKey(key)))
	}
	err := get.Err()
	switch {
	case errors.Is(err, redis.Nil):
		return l, ErrNoLeader
	case err != nil && !strings.HasPrefix(err.Error(), "WRONGTYPE"):
		return Leader{}, fmt.Errorf("read lock %s: %w", key, err)
	case pttl.Err() != nil:
		return Leader{}, fmt.Errorf("read lock %s: %w", key, pttl.Err())
	}
	parts := strings.SplitN(get.Val(), " ", 3)
	tok, perr := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || len(parts) != 3 || perr != nil || tok <= 0 || parts[2] == "" {
		shown := get.Val()
		if err != nil {
			shown = "a value of another type"
		}
		l.Problems = append(l.Problems, fmt.Sprintf("the lock %s holds %.200q, which no campaigner writes: it keeps every "+
			"replica from leading until it is removed (a campaigning replica removes it at its next attempt); remove it now with: redis-cli DEL %s",
			key, shown, key))
		return l, ErrNoLeader
	}
	if pttl.Val() == -1 {
		l.Problems = append(l.Problems, fmt.Sprintf("the lock %s has no expiry, which no campaigner writes: it keeps every "+
			"other replica from leading (a campaigning replica gives it the TTL at its next attempt); remove it now with: redis-cli DEL %s", key, key))
	}
	l.Node, l.Token, l.Remaining = parts[2], tok, max(pttl.Val(), 0)
	return l, nil
}
