package tables

import (
	"slices"
	"strings"
	"time"

	"scheduler"
)

// OutboxFence is the fence of the outbox's dispatcher. It is not a valid job
// name, so it cannot collide with a job's fence.
const OutboxFence = "@outbox"

// Statements the two backends share; {s} is the schema prefix, {ts} and
// {text} the Postgres casts of parameters whose type it cannot deduce.
const (
	// OutboxReleaseSQL hands the messages older terms left sending back to
	// pending. Placeholders: token, now.
	OutboxReleaseSQL = `UPDATE {s}outbox SET status = 'pending', updated_at = $2
		WHERE status = 'sending' AND claim_token < $1`
	// OutboxReleaseOwnSQL hands the messages sending under the dispatcher's
	// own token back to pending, not counting the attempt their claim
	// counted: they were never sent (see fence.Store.ReleaseOutbox).
	// Placeholders: token, now.
	OutboxReleaseOwnSQL = `UPDATE {s}outbox SET status = 'pending', updated_at = $2, attempts = attempts - 1
		WHERE status = 'sending' AND claim_token = $1`
	// OutboxDeferSQL hands one message sending under the dispatcher's own
	// token back to pending, due at next, not counting the attempt its claim
	// counted: it was never sent (see fence.Store.DeferOutbox).
	// Placeholders: token, now, next, key.
	OutboxDeferSQL = `UPDATE {s}outbox SET status = 'pending', updated_at = $2, next_attempt_at = $3, attempts = attempts - 1
		WHERE key = $4 AND status = 'sending' AND claim_token = $1`
	// OutboxRecordSQL records an attempt. Placeholders: key, token, status,
	// at, next (for pending), error. The same record made again by the same
	// term matches as well: when the store went away after a record's commit
	// and before its reply, the dispatcher's repeat must not find the
	// message "not claimed" and keep the outcome unrecorded for the term.
	OutboxRecordSQL = `UPDATE {s}outbox SET status = $3{text}, updated_at = $4{ts},
			delivered_at = CASE WHEN $3 = 'delivered' THEN $4 END,
			next_attempt_at = CASE WHEN $3 = 'pending' THEN $5{ts} ELSE next_attempt_at END,
			last_error = $6
		WHERE key = $1 AND claim_token = $2 AND (status = 'sending'
			OR (status = $3 AND updated_at = $4 AND last_error = $6
				AND (status <> 'pending' OR next_attempt_at = $5)))`
	// OutboxRetrySQL revives a dead message. Placeholders: key, now.
	OutboxRetrySQL = `UPDATE {s}outbox SET status = 'pending', attempts = 0, next_attempt_at = $2, updated_at = $2
		WHERE key = $1 AND status = 'dead'`
	// OutboxListSQL lists messages. Placeholders: status ('' for all), limit.
	OutboxListSQL = `SELECT ` + OutboxCols + ` FROM {s}outbox WHERE $1 = '' OR status = $1 ORDER BY id LIMIT $2`
	// OutboxPruneSQL deletes delivered messages whose run was pruned: the
	// messages of a slot go with its run. Placeholders: job, protect, limit.
	OutboxPruneSQL = `DELETE FROM {s}outbox WHERE id IN (
		SELECT o.id FROM {s}outbox AS o
		WHERE o.job = $1 AND o.status = 'delivered' AND o.scheduled_at < $2
			AND NOT EXISTS (SELECT 1 FROM {s}runs AS r
				WHERE r.job = o.job AND r.scheduled_at = o.scheduled_at AND r.manual = o.manual)
		ORDER BY o.id LIMIT $3)`
	// OutboxSlotSQL lists a slot's messages. Placeholders: job, scheduled_at, manual.
	OutboxSlotSQL = `SELECT ` + OutboxCols + ` FROM {s}outbox
		WHERE job = $1 AND scheduled_at = $2 AND manual = $3 ORDER BY id`
	// OutboxStatsSQL reads the outbox's summary: pending or sending, the
	// oldest of those, dead.
	OutboxStatsSQL = `SELECT
		count(*) FILTER (WHERE status IN ('pending', 'sending')),
		min(created_at) FILTER (WHERE status IN ('pending', 'sending')),
		count(*) FILTER (WHERE status = 'dead')
		FROM {s}outbox WHERE status IN ('pending', 'sending', 'dead')`
)

// PruneSQL selects the runs to delete: the oldest first, on the slot key
// index (job, scheduled_at, manual), which also finds the job's last run
// and the newest Keep finished scheduled runs by a backward scan. Keep
// counts and deletes the scheduler's own runs only: a manual run and a
// backfilled one go by age alone, so that a trigger request, or a backfill
// request a new leader carries on, finds its runs within the age limit. The placeholders
// are job, Before, Keep, Protect and Limit; {s} is the table's schema
// prefix and {keepOffset} the dialect's max(Keep - 1, 0).
const PruneSQL = `WITH last AS (
		SELECT r.run_id FROM {s}runs AS r WHERE r.job = $1
		ORDER BY r.scheduled_at DESC, r.manual DESC LIMIT 1),
	kept AS (
		SELECT r.scheduled_at, r.manual FROM {s}runs AS r WHERE r.job = $1 AND r.status <> 'running' AND NOT r.manual AND r.backfill = 0
		ORDER BY r.scheduled_at DESC, r.manual DESC LIMIT 1 OFFSET {keepOffset}),
	doomed AS (
		SELECT r.run_id FROM {s}runs AS r
		WHERE r.job = $1 AND r.status <> 'running' AND r.scheduled_at < $4
			AND r.run_id NOT IN (SELECT run_id FROM last)
			AND (r.scheduled_at < $2 OR ($3 > 0 AND NOT r.manual AND r.backfill = 0 AND EXISTS (
				SELECT 1 FROM kept AS k WHERE (r.scheduled_at, r.manual) < (k.scheduled_at, k.manual))))
		ORDER BY r.scheduled_at, r.manual LIMIT $5)
	DELETE FROM {s}runs WHERE run_id IN (SELECT run_id FROM doomed)`

// RecordStatus is the status an outcome leaves a message in.
func RecordStatus(o scheduler.DeliveryOutcome) scheduler.MessageStatus {
	switch o {
	case scheduler.DeliveryOK:
		return scheduler.MessageDelivered
	case scheduler.DeliveryRetry:
		return scheduler.MessagePending
	}
	return scheduler.MessageDead
}

// NormTime returns t in UTC truncated to microseconds, the precision of a
// Postgres timestamptz and of the SQLite columns.
func NormTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// CleanText makes s storable as text on both backends: valid UTF-8 and
// without NUL, which Postgres rejects.
func CleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// Distinct returns the sorted distinct values of jobs.
func Distinct(jobs []string) []string {
	jobs = slices.Clone(jobs)
	slices.Sort(jobs)
	return slices.Compact(jobs)
}
