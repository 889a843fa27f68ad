package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"scheduler"
)

// liteOutboxSQL fills in the (empty) schema prefix of an outbox statement.
func liteOutboxSQL(q string) string {
	return strings.NewReplacer("{s}", "", "{ts}", "", "{text}", "").Replace(q)
}

// enqueue checks m's fence inside tx, the caller's IMMEDIATE transaction,
// and inserts m: nothing can write between the check and the commit.
func (l *liteBackend) enqueue(ctx context.Context, tx scheduler.Tx, m scheduler.Message, now time.Time) (bool, error) {
	var fence int64
	switch err := tx.QueryRow(ctx, `SELECT token FROM job_fence WHERE job = $1`, m.Job).Scan(&fence); {
	case errors.Is(err, sql.ErrNoRows):
		return false, staleError(m.Job, m.Token, 0)
	case err != nil:
		return false, fmt.Errorf("read fence: %w", err)
	case fence != m.Token:
		return false, staleError(m.Job, m.Token, fence)
	}
	n, err := tx.Exec(ctx, `INSERT INTO outbox (key, job, scheduled_at, manual, token, kind,
			destination, subject, body, next_attempt_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $10)
		ON CONFLICT (key) DO NOTHING`,
		m.Key, m.Job, m.ScheduledAt.UnixMicro(), m.Manual, m.Token, string(m.Kind), m.Destination,
		cleanText(m.Subject), cleanText(m.Body), now.UnixMicro())
	return n == 1, err
}

func (l *liteBackend) claimOutbox(ctx context.Context, token int64, limit int, now time.Time) ([]scheduler.Message, error) {
	var msgs []scheduler.Message
	err := l.fencedWrite(ctx, []string{OutboxFence}, token, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, liteOutboxSQL(outboxReleaseSQL), token, now.UnixMicro()); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `UPDATE outbox
			SET status = 'sending', attempts = attempts + 1, claim_token = $1, updated_at = $2
			WHERE id IN (SELECT id FROM outbox WHERE status = 'pending' AND next_attempt_at <= $2
				ORDER BY next_attempt_at, id LIMIT $3)
			RETURNING `+outboxCols, token, now.UnixMicro(), limit)
		if err != nil {
			return err
		}
		msgs, err = collectSQL(rows, scanMessage)
		return err
	})
	if err != nil {
		return nil, err
	}
	sortMessages(msgs)
	return msgs, nil
}

func (l *liteBackend) recordDelivery(ctx context.Context, token int64, key string, d scheduler.Delivery) (bool, error) {
	var n int64
	err := l.fencedWrite(ctx, []string{OutboxFence}, token, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, liteOutboxSQL(outboxRecordSQL), key, token, string(recordStatus(d.Outcome)),
			d.At.UnixMicro(), d.Next.UnixMicro(), cleanText(d.Error))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}

func (l *liteBackend) outbox(ctx context.Context, status scheduler.MessageStatus, limit int) ([]scheduler.Message, error) {
	rows, err := l.r.QueryContext(ctx, liteOutboxSQL(outboxListSQL), string(status), limit)
	if err != nil {
		return nil, err
	}
	return collectSQL(rows, scanMessage)
}

func (l *liteBackend) retryOutbox(ctx context.Context, key string, now time.Time) (bool, error) {
	var n int64
	err := l.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, liteOutboxSQL(outboxRetrySQL), key, now.UnixMicro())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}
