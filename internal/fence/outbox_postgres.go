package fence

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"scheduler"
)

// outboxSQL fills in the schema prefix of an outbox statement.
func (p *pgBackend) outboxSQL(q string) string {
	return strings.NewReplacer("{s}", pgx.Identifier{p.schema}.Sanitize()+".", "{ts}", "::timestamptz", "{text}", "::text").Replace(q)
}

// enqueue inserts m behind a fence_verify of its job and token, in the same
// statement: the scheduler's own transaction has entered the fence already,
// and the check makes sure it is m's job's and token's.
func (p *pgBackend) enqueue(ctx context.Context, tx scheduler.Tx, m scheduler.Message, now time.Time) (bool, error) {
	n, err := tx.Exec(ctx, p.outboxSQL(`INSERT INTO {s}outbox (key, job, scheduled_at, manual, token, kind,
			destination, subject, body, next_attempt_at, created_at, updated_at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $10
		WHERE {s}fence_verify($2, $5) IS NOT NULL
		ON CONFLICT ON CONSTRAINT outbox_key DO NOTHING`),
		m.Key, m.Job, m.ScheduledAt, m.Manual, m.Token, string(m.Kind), m.Destination, m.Subject, m.Body, now)
	return n == 1, err
}

func (p *pgBackend) claimOutbox(ctx context.Context, token int64, limit int, now time.Time) ([]scheduler.Message, error) {
	var msgs []scheduler.Message
	err := p.fencedBatch(ctx, []string{OutboxFence}, token, func(b *pgx.Batch) {
		b.Queue(p.outboxSQL(outboxReleaseSQL), token, now)
		b.Queue(p.outboxSQL(`UPDATE {s}outbox AS o
			SET status = 'sending', attempts = o.attempts + 1, claim_token = $1, updated_at = $2
			FROM (SELECT id FROM {s}outbox WHERE status = 'pending' AND next_attempt_at <= $2
				ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) AS d
			WHERE o.id = d.id
			RETURNING `+prefixCols("o.", outboxCols)), token, now, limit).Query(func(rows pgx.Rows) error {
			var err error
			msgs, err = pgx.CollectRows(rows, pgMessage)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	sortMessages(msgs)
	return msgs, nil
}

func (p *pgBackend) recordDelivery(ctx context.Context, token int64, key string, d scheduler.Delivery) (bool, error) {
	var n int64
	err := p.fencedBatch(ctx, []string{OutboxFence}, token, func(b *pgx.Batch) {
		b.Queue(p.outboxSQL(outboxRecordSQL), key, token, string(recordStatus(d.Outcome)), d.At, d.Next, d.Error).
			Exec(func(ct pgconn.CommandTag) error {
				n = ct.RowsAffected()
				return nil
			})
	})
	return n == 1, err
}

func (p *pgBackend) outbox(ctx context.Context, status scheduler.MessageStatus, limit int) ([]scheduler.Message, error) {
	rows, err := p.pool.Query(ctx, p.outboxSQL(outboxListSQL), string(status), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgMessage)
}

func (p *pgBackend) retryOutbox(ctx context.Context, key string, now time.Time) (bool, error) {
	ct, err := p.pool.Exec(ctx, p.outboxSQL(outboxRetrySQL), key, now)
	return ct.RowsAffected() == 1, err
}
