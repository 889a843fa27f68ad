package fence

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// The outbox's design is in the package documentation (# The outbox): why
// its messages are written by fenced transactions only, and why the
// dispatcher's writes are fenced by OutboxFence.

// OutboxFence is the fence of the outbox's dispatcher. It is not a valid job
// name, so it cannot collide with a job's fence.
const OutboxFence = "@outbox"

// Errors of the outbox.
var (
	// ErrNotClaimed reports a delivery recorded for a message that is not
	// being sent under the given token.
	ErrNotClaimed = errors.New("fence: message not claimed with this token")
	// ErrNotDead reports a retry of a message that is not dead.
	ErrNotDead = errors.New("fence: message is not dead")
)

// keyPattern is the form of a message key; the schema checks it as well.
var keyPattern = regexp.MustCompile(`^[A-Za-z0-9_~/+=-]+(\.[A-Za-z0-9_~/+=-]+)*$`)

// outboxBackend is the outbox's part of a backend.
type outboxBackend interface {
	enqueue(ctx context.Context, tx scheduler.Tx, m scheduler.Message, now time.Time) (bool, error)
	claimOutbox(ctx context.Context, token int64, limit int, now time.Time) ([]scheduler.Message, error)
	recordDelivery(ctx context.Context, token int64, key string, d scheduler.Delivery) (bool, error)
	outbox(ctx context.Context, status scheduler.MessageStatus, limit int) ([]scheduler.Message, error)
	retryOutbox(ctx context.Context, key string, now time.Time) (bool, error)
}

var (
	_ outboxBackend = (*pgBackend)(nil)
	_ outboxBackend = (*liteBackend)(nil)
)

func (s *Store) ob() outboxBackend { return s.b.(outboxBackend) }

// Enqueue queues m in tx, the transaction of a Fenced call for m.Job with
// m.Token, so that the message commits with the run's results or not at
// all. It reports whether it queued m: false when a message with m.Key
// exists already (a redo of the slot), whatever that message holds. A
// token that is not m.Job's fence fails with ErrStale (on Postgres
// the fence is checked again with fence_verify, on SQLite in the same
// IMMEDIATE transaction), and the caller's transaction must not commit.
// Status and the delivery fields of m are ignored: a new message is
// pending and due at once.
func (s *Store) Enqueue(ctx context.Context, tx scheduler.Tx, m scheduler.Message) (bool, error) {
	if err := checkMessage(m); err != nil {
		return false, fmt.Errorf("enqueue: %w", err)
	}
	if tx == nil || tx.Dialect() != s.Dialect() {
		return false, fmt.Errorf("enqueue message %q of job %q: want a %s transaction of this store", m.Key, m.Job, s.Dialect())
	}
	m.ScheduledAt = normTime(m.ScheduledAt)
	ok, err := s.ob().enqueue(ctx, tx, m, s.now())
	if err != nil {
		return false, fmt.Errorf("enqueue message %q of job %q with token %d: %w", m.Key, m.Job, m.Token, pgFenceErr(m.Token, err))
	}
	return ok, nil
}

func checkMessage(m scheduler.Message) error {
	if err := checkJobToken(m.Job, m.Token); err != nil {
		return err
	}
	switch {
	case len(m.Key) > 200 || !keyPattern.MatchString(m.Key):
		return fmt.Errorf("message key %q: want %s", m.Key, keyPattern)
	case m.Kind != scheduler.MessageEmail && m.Kind != scheduler.MessageWebhook:
		return fmt.Errorf("message %q: kind %q: want %q or %q", m.Key, m.Kind, scheduler.MessageEmail, scheduler.MessageWebhook)
	case m.Destination == "" || len(m.Destination) > 2048:
		return fmt.Errorf("message %q: destination: want 1 to 2048 bytes", m.Key)
	case m.ScheduledAt.IsZero():
		return fmt.Errorf("message %q: no slot", m.Key)
	}
	return nil
}

// ClaimOutbox claims up to limit pending messages due at now, oldest first,
// for the dispatcher of the term with token: each is marked sending, its
// attempts counted and its ClaimToken set, in one transaction fenced with
// token on OutboxFence, before any of them is sent. The same transaction
// hands the messages that older terms left sending back to pending, due at
// once (a leadership change passes in-flight messages on). A token older
// than the fence claims nothing and fails with ErrStale.
func (s *Store) ClaimOutbox(ctx context.Context, token int64, limit int, now time.Time) ([]scheduler.Message, error) {
	if err := checkJobToken(OutboxFence, token); err != nil {
		return nil, fmt.Errorf("claim outbox: %w", err)
	}
	if limit <= 0 {
		return nil, fmt.Errorf("claim outbox: limit %d: want > 0", limit)
	}
	msgs, err := retried(ctx, s, OutboxFence, token, func() ([]scheduler.Message, error) {
		return s.ob().claimOutbox(ctx, token, limit, normTime(now))
	})
	if err != nil {
		return nil, fmt.Errorf("claim outbox with token %d: %w", token, err)
	}
	return msgs, nil
}

// RecordDelivery records the outcome of an attempt of the message key,
// claimed with token, in a write fenced with token on OutboxFence:
// DeliveryOK marks it delivered, DeliveryRetry pending again and due at
// d.Next, DeliveryDead dead, the
// last two with d.Error. A token older than the fence records nothing
// (ErrStale); a message not sending under token fails with ErrNotClaimed.
func (s *Store) RecordDelivery(ctx context.Context, token int64, key string, d scheduler.Delivery) error {
	if err := checkJobToken(OutboxFence, token); err != nil {
		return fmt.Errorf("record delivery of message %q: %w", key, err)
	}
	switch {
	case d.Outcome != scheduler.DeliveryOK && d.Outcome != scheduler.DeliveryRetry && d.Outcome != scheduler.DeliveryDead:
		return fmt.Errorf("record delivery of message %q: outcome %q", key, d.Outcome)
	case d.At.IsZero() || (d.Outcome == scheduler.DeliveryRetry && d.Next.IsZero()):
		return fmt.Errorf("record delivery of message %q: %s without its times", key, d.Outcome)
	}
	d.At, d.Next = normTime(d.At), normTime(d.Next)
	d.Error = excerptHead(d.Error)
	ok, err := retried(ctx, s, OutboxFence, token, func() (bool, error) { return s.ob().recordDelivery(ctx, token, key, d) })
	switch {
	case err != nil:
		return fmt.Errorf("record delivery of message %q with token %d: %w", key, token, err)
	case !ok:
		return fmt.Errorf("record delivery of message %q with token %d: %w", key, token, ErrNotClaimed)
	}
	return nil
}

// Outbox lists up to limit messages with status (every status when empty),
// oldest first.
func (s *Store) Outbox(ctx context.Context, status scheduler.MessageStatus, limit int) ([]scheduler.Message, error) {
	switch status {
	case "", scheduler.MessagePending, scheduler.MessageSending, scheduler.MessageDelivered, scheduler.MessageDead:
	default:
		return nil, fmt.Errorf("list outbox: status %q", status)
	}
	if limit <= 0 {
		return nil, fmt.Errorf("list outbox: limit %d: want > 0", limit)
	}
	msgs, err := s.ob().outbox(ctx, status, limit)
	if err != nil {
		return nil, fmt.Errorf("list outbox: %w", err)
	}
	return msgs, nil
}

// RetryOutbox puts the dead message key back to pending, due at once, with
// no attempts counted. It is an operator's tool and needs no token: a dead
// message is no dispatcher's. A message that is not dead fails with
// ErrNotDead.
func (s *Store) RetryOutbox(ctx context.Context, key string) error {
	ok, err := s.ob().retryOutbox(ctx, key, s.now())
	switch {
	case err != nil:
		return fmt.Errorf("retry message %q: %w", key, err)
	case !ok:
		return fmt.Errorf("retry message %q: %w", key, ErrNotDead)
	}
	s.lg.Info("message retried", zap.String("key", key))
	return nil
}

// Statements the two backends share; {s} is the schema prefix, {ts} and
// {text} the Postgres casts of parameters whose type it cannot deduce.
const (
	// outboxReleaseSQL hands the messages older terms left sending back to
	// pending. Placeholders: token, now.
	outboxReleaseSQL = `UPDATE {s}outbox SET status = 'pending', updated_at = $2
		WHERE status = 'sending' AND claim_token < $1`
	// outboxRecordSQL records an attempt. Placeholders: key, token, status,
	// at, next (for pending), error.
	outboxRecordSQL = `UPDATE {s}outbox SET status = $3{text}, updated_at = $4{ts},
			delivered_at = CASE WHEN $3 = 'delivered' THEN $4 END,
			next_attempt_at = CASE WHEN $3 = 'pending' THEN $5{ts} ELSE next_attempt_at END,
			last_error = $6
		WHERE key = $1 AND status = 'sending' AND claim_token = $2`
	// outboxRetrySQL revives a dead message. Placeholders: key, now.
	outboxRetrySQL = `UPDATE {s}outbox SET status = 'pending', attempts = 0, next_attempt_at = $2, updated_at = $2
		WHERE key = $1 AND status = 'dead'`
	// outboxListSQL lists messages. Placeholders: status ('' for all), limit.
	outboxListSQL = `SELECT ` + outboxCols + ` FROM {s}outbox WHERE $1 = '' OR status = $1 ORDER BY id LIMIT $2`
	// outboxPruneSQL deletes delivered messages whose run was pruned: the
	// messages of a slot go with its run. Placeholders: job, protect, limit.
	outboxPruneSQL = `DELETE FROM {s}outbox WHERE id IN (
		SELECT o.id FROM {s}outbox AS o
		WHERE o.job = $1 AND o.status = 'delivered' AND o.scheduled_at < $2
			AND NOT EXISTS (SELECT 1 FROM {s}runs AS r
				WHERE r.job = o.job AND r.scheduled_at = o.scheduled_at AND r.manual = o.manual)
		ORDER BY o.id LIMIT $3)`
)

// sortMessages orders claimed messages as they were due: the order of an
// UPDATE's RETURNING rows is not defined.
func sortMessages(msgs []scheduler.Message) {
	slices.SortStableFunc(msgs, func(a, b scheduler.Message) int { return a.NextAttempt.Compare(b.NextAttempt) })
}

// recordStatus is the status an outcome leaves a message in.
func recordStatus(o scheduler.DeliveryOutcome) scheduler.MessageStatus {
	switch o {
	case scheduler.DeliveryOK:
		return scheduler.MessageDelivered
	case scheduler.DeliveryRetry:
		return scheduler.MessagePending
	}
	return scheduler.MessageDead
}
