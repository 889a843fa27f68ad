package fence

import (
	"context"
	"fmt"
	"time"
)

// StoreNow reads the store's own clock: Postgres's. ok is false where the store keeps no time of
// its own (SQLite runs in the process, on its clock). A new leader compares it with its own
// clock before it decides which slots are due (jobs.StoreClock).
func (s *Store) StoreNow(ctx context.Context) (now time.Time, ok bool, err error) {
	now, ok, err = s.b.Clock(ctx)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read the store's clock: %w", err)
	}
	return now, ok, nil
}
