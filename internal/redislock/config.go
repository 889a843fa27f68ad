package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"scheduler/internal/lease"
)

// Config configures a Campaigner.
type Config struct {
	// Key is the lock's key (redis.key). The token counter lives at
	// Key + ":token" and changes are published on Key + ":events". On
	// Redis Cluster the key must carry a hash tag ("{scheduler}:leader") so
	// that the lock and the counter share a slot, as the scripts need.
	Key string
	// Node is the replica name, shown as the leader by observers.
	Node string
	// TTL is how long taking or renewing the lock keeps it (PX), counted by
	// the Redis server from when it runs the script. At least 1 s.
	TTL time.Duration
	// Margin is how long before the lock could expire on the server the
	// leader steps down when no renewal succeeded. Zero means
	// max(TTL/5, 500ms). It must be below 2/3 of TTL.
	Margin time.Duration
	// Poll bounds how long a follower waits between two attempts when no
	// message arrives. Zero means TTL.
	Poll time.Duration
	// Floor returns the lowest token the store can still accept minus one:
	// the store's highest fence. It is read before every attempt to take
	// the lock, and the token taken is above it even when the counter in
	// Redis fell back (FLUSHALL, a restart without persistence, a failover
	// to a replica that missed writes). An error skips the attempt. Nil
	// means no floor, which is safe (the fence still refuses a low token)
	// but lets the backend wedge below the fence until the counter climbs.
	Floor func(ctx context.Context) (int64, error)
	// Events receives leadership changes and renewals, e.g. for metrics.
	// Every hook is optional.
	Events Events
	// Now reads the clock for renewal deadlines and Term.Since. Nil means
	// time.Now; a custom clock must keep Go's monotonic reading.
	Now func() time.Time
}

// Events are optional hooks, called synchronously from Run's goroutines
// (see lease.Events). OnRenewed is called after every successful
// take or renewal of the lock of a term.
type Events = lease.Events

// validate checks c and fills in defaults.
func (c *Config) validate() error {
	var errs []error
	if c.Key == "" {
		errs = append(errs, errors.New("key: empty"))
	}
	if c.Node == "" {
		errs = append(errs, errors.New("node: empty"))
	}
	errs = append(errs, lease.Timing("ttl", c.TTL, &c.Margin, &c.Poll, &c.Now)...)
	if c.Floor == nil {
		c.Floor = func(context.Context) (int64, error) { return 0, nil }
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("redislock config: %w", err)
	}
	return nil
}
