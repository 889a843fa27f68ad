package fence

import (
	"context"
	"fmt"
	"time"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// OutboxStats summarises the messages waiting for delivery, for metrics.
type OutboxStats struct {
	// Pending counts the messages pending or sending.
	Pending int
	// OldestPending is when the oldest of them was queued; zero when none.
	OldestPending time.Time
	// Dead counts the dead messages.
	Dead int
}

// SlotMessages lists the messages that the runs of job's slot (scheduledAt,
// manual) queued, oldest first, for the history of a run.
func (s *Store) SlotMessages(ctx context.Context, job string, scheduledAt time.Time, manual bool) ([]scheduler.Message, error) {
	at := tables.NormTime(scheduledAt)
	msgs, err := s.b.SlotMessages(ctx, job, at, manual)
	if err != nil {
		return nil, fmt.Errorf("list messages of job %q slot %s: %w", job, at.Format(time.RFC3339), err)
	}
	return msgs, nil
}

// OutboxStats reads the outbox's summary in one query.
func (s *Store) OutboxStats(ctx context.Context) (OutboxStats, error) {
	var (
		st  OutboxStats
		err error
	)
	if st.Pending, st.OldestPending, st.Dead, err = s.b.OutboxStats(ctx); err != nil {
		return OutboxStats{}, fmt.Errorf("read outbox stats: %w", err)
	}
	return st, nil
}
