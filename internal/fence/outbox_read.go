package fence

import (
	"context"
	"database/sql"
	"fmt"
	"time"

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
		rows, qerr := b.pool.Query(ctx, b.outboxSQL(outboxSlotSQL), job, at, manual)
		if qerr != nil {
			err = qerr
			break
		}
		msgs, err = collectPgMessages(rows)
	case *liteBackend:
		rows, qerr := b.r.QueryContext(ctx, liteOutboxSQL(outboxSlotSQL), job, at.UnixMicro(), manual)
		if qerr != nil {
			err = qerr
			break
		}
		msgs, err = scanLiteMessages(rows)
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
		oldest sql.NullTime
		err    error
	)
	switch b := s.b.(type) {
	case *pgBackend:
		var t *time.Time
		err = b.pool.QueryRow(ctx, b.outboxSQL(outboxStatsSQL)).Scan(&st.Pending, &t, &st.Dead)
		if t != nil {
			oldest = sql.NullTime{Time: *t, Valid: true}
		}
	case *liteBackend:
		var micros sql.NullInt64
		err = b.r.QueryRowContext(ctx, liteOutboxSQL(outboxStatsSQL)).Scan(&st.Pending, &micros, &st.Dead)
		if micros.Valid {
			oldest = sql.NullTime{Time: time.UnixMicro(micros.Int64), Valid: true}
		}
	}
	if err != nil {
		return OutboxStats{}, fmt.Errorf("read outbox stats: %w", err)
	}
	if oldest.Valid {
		st.OldestPending = oldest.Time.UTC()
	}
	return st, nil
}
