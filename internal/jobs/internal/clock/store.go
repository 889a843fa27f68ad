package clock

import (
	"context"
	"fmt"
	"time"
)

// MaxAhead is how far a new leader's clock may run ahead of its store's. Behind it, the leader
// takes its store's time for the slots it decides at takeover; beyond it, it does not lead: its
// firing would run every slot early by as much.
const MaxAhead = 5 * time.Second

// Store is a ledger whose store keeps time of its own (Postgres): StoreNow reads it; ok is false
// where it keeps none.
type Store interface {
	StoreNow(ctx context.Context) (now time.Time, ok bool, err error)
}

// Ahead reads s's clock between two readings of c and returns how far ahead of it c runs, at the
// least (the store's reading was taken after c's first reading); 0 when c runs behind, when s
// keeps no time (or s is nil), or when it could not be read (err, for the log: the caller goes
// on with c).
func Ahead(ctx context.Context, c Clock, s Store) (time.Duration, error) {
	if s == nil {
		return 0, nil
	}
	before := c.Now()
	now, ok, err := s.StoreNow(ctx)
	if err != nil || !ok {
		return 0, err
	}
	return max(before.Sub(now), 0), nil
}

// ErrAhead is the error of a leader whose clock runs more than MaxAhead ahead of its store's.
func ErrAhead(ahead time.Duration) error {
	return fmt.Errorf("this node's clock runs %s ahead of the store's (at most %s allowed): it would decide slots still to come as due, and run every slot early; not leading until the clocks agree (NTP): this node's, or the store server's if every replica reports this",
		ahead.Round(time.Millisecond), MaxAhead)
}
