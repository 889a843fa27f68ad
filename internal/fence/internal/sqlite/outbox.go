package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
	"scheduler/internal/fence/internal/verdict"
)

// liteOutboxSQL fills in the (empty) schema prefix of an outbox statement.
func liteOutboxSQL(q string) string {
	return strings.NewReplacer("{s}", "", "{ts}", "", "{text}", "").Replace(q)
}

// Enqueue checks m's fence inside tx, the caller's IMMEDIATE transaction,
// and inserts m: nothing can write between the check and the commit.
func (l *Backend) Enqueue(ctx context.Context, tx scheduler.Tx, m scheduler.Message, now time.Time) (bool, error) {
	var fence int64
	switch err := tx.QueryRow(ctx, `SELECT token FROM job_fence WHERE job = $1`, m.Job).Scan(&fence); {
	case errors.Is(err, sql.ErrNoRows):
		return false, verdict.Stale(m.Job, m.Token, 0)
	case err != nil:
		return false, fmt.Errorf("read fence: %w", err)
	case fence != m.Token:
		return false, verdict.Stale(m.Job, m.Token, fence)
	}
	n, err := tx.Exec(ctx, `INSERT INTO outbox (key, job, scheduled_at, manual, token, kind,
			destination, subject, body, next_attempt_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $10)
		ON CONFLICT (key) DO NOTHING`,
		m.Key, m.Job, m.ScheduledAt.UnixMicro(), m.Manual, m.Token, string(m.Kind), m.Destination,
		tables.CleanText(m.Subject), tables.CleanText(m.Body), now.UnixMicro())
	return n == 1, err
}

// ClaimOutbox hands the messages older terms left sending back to pending
// and claims up to limit pending messages due at now, in one write fenced
// with token on the outbox's fence.
func (l *Backend) ClaimOutbox(ctx context.Context, token int64, limit int, now time.Time) ([]scheduler.Message, error) {
	var msgs []scheduler.Message
	err := l.fencedWrite(ctx, []string{tables.OutboxFence}, token, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, liteOutboxSQL(tables.OutboxReleaseSQL), token, now.UnixMicro()); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `UPDATE outbox
			SET status = 'sending', attempts = attempts + 1, claim_token = $1, updated_at = $2
			WHERE id IN (SELECT id FROM outbox WHERE status = 'pending' AND next_attempt_at <= $2
				ORDER BY next_attempt_at, id LIMIT $3)
			RETURNING `+tables.OutboxCols, token, now.UnixMicro(), limit)
		if err != nil {
			return err
		}
		msgs, err = tables.CollectSQL(rows, tables.ScanMessage)
		return err
	})
	return msgs, err
}

// ReleaseOutbox hands the messages sending under token back to pending, in
// one IMMEDIATE transaction that entered the outbox's fence with token.
func (l *Backend) ReleaseOutbox(ctx context.Context, token int64, now time.Time) (int64, error) {
	var n int64
	err := l.fencedWrite(ctx, []string{tables.OutboxFence}, token, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, liteOutboxSQL(tables.OutboxReleaseOwnSQL), token, now.UnixMicro())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// DeferOutbox hands the messages keys sending under token back to pending, due at next, in
// one IMMEDIATE transaction that entered the outbox's fence with token.
func (l *Backend) DeferOutbox(ctx context.Context, token int64, keys []string, now, next time.Time) (int64, error) {
	var n int64
	err := l.fencedWrite(ctx, []string{tables.OutboxFence}, token, func(tx *sql.Tx) error {
		for _, key := range keys {
			res, err := tx.ExecContext(ctx, liteOutboxSQL(tables.OutboxDeferSQL), token, now.UnixMicro(), next.UnixMicro(), key)
			if err != nil {
				return err
			}
			k, err := res.RowsAffected()
			if err != nil {
				return err
			}
			n += k
		}
		return nil
	})
	return n, err
}

// RecordDelivery records, in one IMMEDIATE transaction that entered the
// outbox's fence with token, an attempt of the message key claimed with
// that token; false when the message is not sending under it.
func (l *Backend) RecordDelivery(ctx context.Context, token int64, key string, d scheduler.Delivery) (bool, error) {
	var n int64
	err := l.fencedWrite(ctx, []string{tables.OutboxFence}, token, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, liteOutboxSQL(tables.OutboxRecordSQL), key, token, string(tables.RecordStatus(d.Outcome)),
			d.At.UnixMicro(), d.Next.UnixMicro(), tables.CleanText(d.Error))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n != 1 {
			return err
		}
		return queueDeadNotice(ctx, tx, token, key, d.At, d.Notice)
	})
	return n == 1, err
}

// Outbox lists up to limit messages with status (all when empty), oldest first.
func (l *Backend) Outbox(ctx context.Context, status scheduler.MessageStatus, limit int) ([]scheduler.Message, error) {
	rows, err := l.r.QueryContext(ctx, liteOutboxSQL(tables.OutboxListSQL), string(status), limit)
	if err != nil {
		return nil, err
	}
	return tables.CollectSQL(rows, tables.ScanMessage)
}

// RetryOutbox puts the dead message key back to pending; false when it is
// not dead.
func (l *Backend) RetryOutbox(ctx context.Context, key string, now time.Time) (bool, error) {
	var n int64
	err := l.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, liteOutboxSQL(tables.OutboxRetrySQL), key, now.UnixMicro())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}

// SlotMessages lists the messages of job's slot (at, manual), oldest first.
func (l *Backend) SlotMessages(ctx context.Context, job string, at time.Time, manual bool) ([]scheduler.Message, error) {
	rows, err := l.r.QueryContext(ctx, liteOutboxSQL(tables.OutboxSlotSQL), job, at.UnixMicro(), manual)
	if err != nil {
		return nil, err
	}
	return tables.CollectSQL(rows, tables.ScanMessage)
}

// OutboxStats reads the outbox's summary in one query: the messages pending
// or sending, when the oldest of them was queued, and the dead ones.
func (l *Backend) OutboxStats(ctx context.Context) (pending int, oldest time.Time, dead int, err error) {
	var o tables.Time
	err = l.r.QueryRowContext(ctx, liteOutboxSQL(tables.OutboxStatsSQL)).Scan(&pending, &o, &dead)
	return pending, o.T, dead, err
}
