package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// outboxSQL fills in the schema prefix of an outbox statement.
func (p *Backend) outboxSQL(q string) string {
	return strings.NewReplacer("{s}", pgx.Identifier{p.schema}.Sanitize()+".", "{ts}", "::timestamptz", "{text}", "::text").Replace(q)
}

// Enqueue inserts m behind a fence_verify of its job and token, in the same
// statement: the scheduler's own transaction has entered the fence already,
// and the check makes sure it is m's job's and token's.
func (p *Backend) Enqueue(ctx context.Context, tx scheduler.Tx, m scheduler.Message, now time.Time) (bool, error) {
	n, err := tx.Exec(ctx, p.outboxSQL(`INSERT INTO {s}outbox (key, job, scheduled_at, manual, token, kind,
			destination, subject, body, next_attempt_at, created_at, updated_at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $10
		WHERE {s}fence_verify($2, $5) IS NOT NULL
		ON CONFLICT ON CONSTRAINT outbox_key DO NOTHING`),
		m.Key, m.Job, m.ScheduledAt, m.Manual, m.Token, string(m.Kind), m.Destination, m.Subject, m.Body, now)
	return n == 1, pgFenceErr(m.Token, err)
}

// ClaimOutbox hands the messages older terms left sending back to pending
// and claims up to limit pending messages due at now, in one batch fenced
// with token on the outbox's fence.
func (p *Backend) ClaimOutbox(ctx context.Context, token int64, limit int, now time.Time) ([]scheduler.Message, error) {
	var msgs []scheduler.Message
	err := p.fencedBatch(ctx, []string{tables.OutboxFence}, token, func(b *pgx.Batch) {
		b.Queue(p.outboxSQL(tables.OutboxReleaseSQL), token, now)
		b.Queue(p.outboxSQL(`UPDATE {s}outbox AS o
			SET status = 'sending', attempts = o.attempts + 1, claim_token = $1, updated_at = $2
			FROM (SELECT id FROM {s}outbox WHERE status = 'pending' AND next_attempt_at <= $2
				ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) AS d
			WHERE o.id = d.id
			RETURNING `+tables.PrefixCols("o.", tables.OutboxCols)), token, now, limit).Query(func(rows pgx.Rows) error {
			var err error
			msgs, err = pgx.CollectRows(rows, pgMessage)
			return err
		})
	})
	return msgs, err
}

// ReleaseOutbox hands the messages sending under token back to pending, in
// one batch fenced with token on the outbox's fence.
func (p *Backend) ReleaseOutbox(ctx context.Context, token int64, now time.Time) (int64, error) {
	var n int64
	err := p.fencedBatch(ctx, []string{tables.OutboxFence}, token, func(b *pgx.Batch) {
		b.Queue(p.outboxSQL(tables.OutboxReleaseOwnSQL), token, now).Exec(func(tag pgconn.CommandTag) error {
			n = tag.RowsAffected()
			return nil
		})
	})
	return n, err
}

// DeferOutbox hands the messages keys sending under token back to pending, due at next, in
// one batch fenced with token on the outbox's fence.
func (p *Backend) DeferOutbox(ctx context.Context, token int64, keys []string, now, next time.Time) (int64, error) {
	var n int64
	err := p.fencedBatch(ctx, []string{tables.OutboxFence}, token, func(b *pgx.Batch) {
		for _, key := range keys {
			b.Queue(p.outboxSQL(tables.OutboxDeferSQL), token, now, next, key).Exec(func(tag pgconn.CommandTag) error {
				n += tag.RowsAffected()
				return nil
			})
		}
	})
	return n, err
}

// RecordDelivery records an attempt of the message key claimed with token,
// fenced with token on the outbox's fence; false when it is not sending
// under token.
func (p *Backend) RecordDelivery(ctx context.Context, token int64, key string, d scheduler.Delivery) (bool, error) {
	var n int64
	err := p.fencedBatch(ctx, []string{tables.OutboxFence}, token, func(b *pgx.Batch) {
		b.Queue(p.outboxSQL(tables.OutboxRecordSQL), key, token, string(tables.RecordStatus(d.Outcome)), d.At, d.Next, d.Error).
			Exec(func(ct pgconn.CommandTag) error {
				n = ct.RowsAffected()
				return nil
			})
		p.queueDeadNotice(b, token, key, d.At, d.Notice)
	})
	return n == 1, err
}

// Outbox lists up to limit messages with status (all when empty), oldest first.
func (p *Backend) Outbox(ctx context.Context, status scheduler.MessageStatus, limit int) ([]scheduler.Message, error) {
	rows, err := p.pool.Query(ctx, p.outboxSQL(tables.OutboxListSQL), string(status), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgMessage)
}

// RetryOutbox puts the dead message key back to pending; false when it is
// not dead.
func (p *Backend) RetryOutbox(ctx context.Context, key string, now time.Time) (bool, error) {
	ct, err := p.pool.Exec(ctx, p.outboxSQL(tables.OutboxRetrySQL), key, now)
	return ct.RowsAffected() == 1, err
}

// pgMessage is tables.ScanMessage for pgx.CollectRows.
func pgMessage(row pgx.CollectableRow) (scheduler.Message, error) { return tables.ScanMessage(row) }

// SlotMessages lists the messages of job's slot (at, manual), oldest first.
func (p *Backend) SlotMessages(ctx context.Context, job string, at time.Time, manual bool) ([]scheduler.Message, error) {
	rows, err := p.pool.Query(ctx, p.outboxSQL(tables.OutboxSlotSQL), job, at, manual)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgMessage)
}

// OutboxStats reads the outbox's summary in one query: the messages pending
// or sending, when the oldest of them was queued, and the dead ones.
func (p *Backend) OutboxStats(ctx context.Context) (pending int, oldest time.Time, dead int, err error) {
	var o tables.Time
	err = p.pool.QueryRow(ctx, p.outboxSQL(tables.OutboxStatsSQL)).Scan(&pending, &o, &dead)
	return pending, o.T, dead, err
}
