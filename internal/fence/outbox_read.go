package fence

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"scheduler"
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

// Statements of the outbox's reads; {s} is the schema prefix.
const (
	// outboxSlotSQL lists a slot's messages. Placeholders: job, scheduled_at, manual.
	outboxSlotSQL = `SELECT ` + outboxCols + ` FROM {s}outbox
		WHERE job = $1 AND scheduled_at = $2 AND manual = $3 ORDER BY id`
	outboxStatsSQL = `SELECT
		count(*) FILTER (WHERE status IN ('pending', 'sending')),
		min(created_at) FILTER (WHERE status IN ('pending', 'sending')),
		count(*) FILTER (WHERE status = 'dead')
		FROM {s}outbox WHERE status IN ('pending', 'sending', 'dead')`
)

// SlotMessages lists the messages that the runs of job's slot (scheduledAt,
// manual) queued, oldest first, for the history of a run.
func (s *Store) SlotMessages(ctx context.Context, job string, scheduledAt time.Time, manual bool) ([]scheduler.Message, error) {
	var (
		msgs []scheduler.Message
		err  error
	)
	at := normTime(scheduledAt)
	switch b := s.b.(type) {
	case *pgBackend:
		var rows pgx.Rows
		if rows, err = b.pool.Query(ctx, b.outboxSQL(outboxSlotSQL), job, at, manual); err == nil {
			msgs, err = pgx.CollectRows(rows, pgMessage)
		}
	case *liteBackend:
		var rows *sql.Rows
		if rows, err = b.r.QueryContext(ctx, liteOutboxSQL(outboxSlotSQL), job, at.UnixMicro(), manual); err == nil {
			msgs, err = collectSQL(rows, scanMessage)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("list messages of job %q slot %s: %w", job, at.Format(time.RFC3339), err)
	}
	return msgs, nil
}

// OutboxStats reads the outbox's summary in one query.
func (s *Store) OutboxStats(ctx context.Context) (OutboxStats, error) {
	var (
		st     OutboxStats
		oldest dbTime
		row    rowScanner
	)
	switch b := s.b.(type) {
	case *pgBackend:
		row = b.pool.QueryRow(ctx, b.outboxSQL(outboxStatsSQL))
	case *liteBackend:
		row = b.r.QueryRowContext(ctx, liteOutboxSQL(outboxStatsSQL))
	}
	if err := row.Scan(&st.Pending, &oldest, &st.Dead); err != nil {
		return OutboxStats{}, fmt.Errorf("read outbox stats: %w", err)
	}
	st.OldestPending = oldest.t
	return st, nil
}
