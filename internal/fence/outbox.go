package fence

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// The outbox's design is in the package documentation (# The outbox): why
// its messages are written by fenced transactions only, and why the
// dispatcher's writes are fenced by OutboxFence.

// OutboxFence is the fence of the outbox's dispatcher. It is not a valid job
// name, so it cannot collide with a job's fence.
const OutboxFence = tables.OutboxFence

// Errors of the outbox.
var (
	// ErrNotClaimed reports a delivery recorded for a message that is not
	// being sent under the given token.
	ErrNotClaimed = errors.New("fence: message not claimed with this token")
	// ErrNotDead reports a retry of a message that is not dead.
	ErrNotDead = errors.New("fence: message is not dead")
	// ErrInvalidMessage reports a message refused before it reaches the
	// store: its key, kind or slot is wrong, or its destination, subject or
	// body holds a NUL byte or is not valid UTF-8.
	ErrInvalidMessage = errors.New("fence: invalid message")
)

// keyPattern is the form of a message key; the schema checks it as well.
var keyPattern = regexp.MustCompile(`^[A-Za-z0-9_~/+=-]+(\.[A-Za-z0-9_~/+=-]+)*$`)

// outbox is the outbox's part of a backend.
type outbox interface {
	Enqueue(ctx context.Context, tx scheduler.Tx, m scheduler.Message, now time.Time) (bool, error)
	ClaimOutbox(ctx context.Context, token int64, limit int, now time.Time) ([]scheduler.Message, error)
	RecordDelivery(ctx context.Context, token int64, key string, d scheduler.Delivery) (bool, error)
	ReleaseOutbox(ctx context.Context, token int64, now time.Time) (int64, error)
	DeferOutbox(ctx context.Context, token int64, keys []string, now, next time.Time) (int64, error)
	Outbox(ctx context.Context, status scheduler.MessageStatus, limit int) ([]scheduler.Message, error)
	RetryOutbox(ctx context.Context, key string, now time.Time) (bool, error)
	SlotMessages(ctx context.Context, job string, at time.Time, manual bool) ([]scheduler.Message, error)
	OutboxStats(ctx context.Context) (pending int, oldest time.Time, dead int, err error)
}

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
	m.ScheduledAt = tables.NormTime(m.ScheduledAt)
	ok, err := s.b.Enqueue(ctx, tx, m, s.now())
	if err != nil {
		return false, fmt.Errorf("enqueue message %q of job %q with token %d: %w", m.Key, m.Job, m.Token, err)
	}
	return ok, nil
}

func checkMessage(m scheduler.Message) error {
	if err := checkJobToken(m.Job, m.Token); err != nil {
		return err
	}
	switch {
	case len(m.Key) > 200 || !keyPattern.MatchString(m.Key):
		return fmt.Errorf("%w: key %q: want %s", ErrInvalidMessage, m.Key, keyPattern)
	case m.Kind != scheduler.MessageEmail && m.Kind != scheduler.MessageWebhook:
		return fmt.Errorf("%w %q: kind %q: want %q or %q", ErrInvalidMessage, m.Key, m.Kind, scheduler.MessageEmail, scheduler.MessageWebhook)
	case m.Destination == "" || len(m.Destination) > 2048:
		return fmt.Errorf("%w %q: destination: want 1 to 2048 bytes", ErrInvalidMessage, m.Key)
	case m.ScheduledAt.IsZero():
		return fmt.Errorf("%w %q: no slot", ErrInvalidMessage, m.Key)
	}
	for _, f := range []struct{ name, v string }{{"destination", m.Destination}, {"subject", m.Subject}, {"body", m.Body}} {
		if err := checkText(f.v); err != "" {
			return fmt.Errorf("%w %q: %s %s", ErrInvalidMessage, m.Key, f.name, err)
		}
	}
	return nil
}

// checkText says what makes v unfit for a message's text, "" when nothing
// does. Postgres's text refuses NUL and invalid UTF-8, and SQLite's would
// keep them, its length checks stopping at the first NUL: refused here, a
// message is refused alike on both stores, before its transaction writes.
func checkText(v string) string {
	switch {
	case strings.IndexByte(v, 0) >= 0:
		return "holds a NUL byte"
	case !utf8.ValidString(v):
		return "is not valid UTF-8"
	}
	return ""
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
		return s.b.ClaimOutbox(ctx, token, limit, tables.NormTime(now))
	})
	if err != nil {
		return nil, fmt.Errorf("claim outbox with token %d: %w", token, err)
	}
	sortMessages(msgs)
	return msgs, nil
}

// ReleaseOutbox hands every message sending under token back to pending,
// due as it was, its claim's attempt not counted, in one transaction fenced
// with token on OutboxFence, and returns how many. It is for a dispatcher
// with no delivery in flight and every outcome recorded after a claim (or a
// DeferOutbox) failed: the messages still sending under its token are then
// that write's, committed though its answer was lost, or claimed and not
// started, and none of them is sent.
func (s *Store) ReleaseOutbox(ctx context.Context, token int64, now time.Time) (int64, error) {
	if err := checkJobToken(OutboxFence, token); err != nil {
		return 0, fmt.Errorf("release outbox: %w", err)
	}
	n, err := retried(ctx, s, OutboxFence, token, func() (int64, error) {
		return s.b.ReleaseOutbox(ctx, token, tables.NormTime(now))
	})
	if err != nil {
		return 0, fmt.Errorf("release outbox messages claimed with token %d: %w", token, err)
	}
	return n, nil
}

// DeferOutbox hands the messages keys that are sending under token back to pending, due at
// next and updated at now, their claim's attempt not counted, in one transaction fenced with token on
// OutboxFence, and returns how many it handed back (a key not sending under token is left
// alone). It is for a dispatcher that claimed messages it will not send in this claim, and
// has not started: those of a destination that does not answer, which wait for it elsewhere
// than in the dispatcher's memory and leave the claims free for the others' messages.
func (s *Store) DeferOutbox(ctx context.Context, token int64, keys []string, now, next time.Time) (int64, error) {
	if err := checkJobToken(OutboxFence, token); err != nil {
		return 0, fmt.Errorf("defer outbox: %w", err)
	}
	if len(keys) == 0 {
		return 0, nil
	}
	n, err := retried(ctx, s, OutboxFence, token, func() (int64, error) {
		return s.b.DeferOutbox(ctx, token, keys, tables.NormTime(now), tables.NormTime(next))
	})
	if err != nil {
		return 0, fmt.Errorf("defer %d outbox messages claimed with token %d: %w", len(keys), token, err)
	}
	return n, nil
}

// sortMessages orders claimed messages as they were due: the order of an
// UPDATE's RETURNING rows is not defined.
func sortMessages(msgs []scheduler.Message) {
	slices.SortStableFunc(msgs, func(a, b scheduler.Message) int { return a.NextAttempt.Compare(b.NextAttempt) })
}

// RecordDelivery records the outcome of an attempt of the message key,
// claimed with token, in a write fenced with token on OutboxFence:
// DeliveryOK marks it delivered, DeliveryRetry pending again and due at
// d.Next, DeliveryDead dead, the
// last two with d.Error. A token older than the fence records nothing
// (ErrStale); a message not sending under token fails with ErrNotClaimed,
// but for the same record made again under the same token, which succeeds:
// a record whose reply was lost can be repeated. A dead outcome's
// d.Notice is queued in the same write, as messages of the dead message's
// slot, once (a repeat finds their keys taken).
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
	if d.Notice != nil && d.Outcome != scheduler.DeliveryDead {
		return fmt.Errorf("record delivery of message %q: a notice with outcome %q: only a dead message notifies", key, d.Outcome)
	}
	if err := checkNotice(OutboxFence, token, d.Notice); err != nil {
		return fmt.Errorf("record delivery of message %q: %w", key, err)
	}
	d.At, d.Next = tables.NormTime(d.At), tables.NormTime(d.Next)
	d.Error = excerptHead(d.Error)
	ok, err := retried(ctx, s, OutboxFence, token, func() (bool, error) { return s.b.RecordDelivery(ctx, token, key, d) })
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
	msgs, err := s.b.Outbox(ctx, status, limit)
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
	ok, err := s.b.RetryOutbox(ctx, key, s.now())
	switch {
	case err != nil:
		return fmt.Errorf("retry message %q: %w", key, err)
	case !ok:
		return fmt.Errorf("retry message %q: %w", key, ErrNotDead)
	}
	s.lg.Info("message retried", zap.String("key", key))
	return nil
}
