package sqlite

import (
	"context"
	"database/sql"
	"time"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// The notices of outcomes, queued in the transaction that wrote the
// outcomes, after them: only for the runs it wrote, each when its streak of
// failures, counted in slot order, is the notice's After.

// liteStreak reads a job's runs that count for a streak, newest slot first,
// from a slot back. Placeholders: job, scheduled_at, manual, limit.
const liteStreak = `SELECT status FROM runs
	WHERE job = $1 AND (scheduled_at < $2 OR (scheduled_at = $2 AND manual <= $3))
		AND status IN ('succeeded', 'failed', 'fenced', 'missed')
	ORDER BY scheduled_at DESC, manual DESC LIMIT $4`

// liteNoticeInsert queues one message of a notice.
const liteNoticeInsert = `INSERT INTO outbox (key, job, scheduled_at, manual, token, kind,
		destination, subject, body, next_attempt_at, created_at, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $10)
	ON CONFLICT (key) DO NOTHING`

// queueNotice queues the messages of n, the notice of the run of slot that
// tx wrote, when the run's streak is n.After.
func queueNotice(ctx context.Context, tx *sql.Tx, token int64, now time.Time, slot scheduler.SlotKey, n *scheduler.Notice) error {
	if n == nil || len(n.Messages) == 0 {
		return nil
	}
	if n.After > 0 {
		rows, err := tx.QueryContext(ctx, liteStreak, slot.Job, slot.At.UnixMicro(), slot.Manual, n.After+1)
		if err != nil {
			return err
		}
		statuses, err := tables.CollectSQL(rows, func(row tables.RowScanner) (s string, err error) { return s, row.Scan(&s) })
		if err != nil {
			return err
		}
		if streak(statuses) != n.After {
			return nil
		}
	}
	for _, m := range n.Messages {
		if _, err := tx.ExecContext(ctx, liteNoticeInsert, m.Key, slot.Job, slot.At.UnixMicro(), slot.Manual, token,
			string(m.Kind), m.Destination, tables.CleanText(m.Subject), tables.CleanText(m.Body), now.UnixMicro()); err != nil {
			return err
		}
	}
	return nil
}

// streak counts the failures before the first success of statuses, newest first.
func streak(statuses []string) int {
	for i, s := range statuses {
		if s == string(scheduler.StatusSucceeded) {
			return i
		}
	}
	return len(statuses)
}

// completeNotices queues the notices of the completions of cs that res says
// tx wrote.
func completeNotices(ctx context.Context, tx *sql.Tx, token int64, now time.Time, cs []scheduler.Completion, res []scheduler.Result) error {
	byID := make(map[int64]*scheduler.Notice, len(cs))
	for _, c := range cs {
		if c.Notice != nil {
			byID[c.RunID] = c.Notice
		}
	}
	if len(byID) == 0 {
		return nil
	}
	for _, r := range res {
		if n := byID[r.Run.RunID]; n != nil && r.Written {
			if err := queueNotice(ctx, tx, token, now, r.Run.Key(), n); err != nil {
				return err
			}
		}
	}
	return nil
}

// recordNotices queues the notices of the outcomes of outs that res says tx
// wrote.
func recordNotices(ctx context.Context, tx *sql.Tx, token int64, now time.Time, outs []scheduler.Outcome, res []scheduler.Result) error {
	type key struct {
		job    string
		at     int64
		manual bool
	}
	by := map[key]*scheduler.Notice{}
	for _, o := range outs {
		if o.Notice != nil {
			by[key{o.Slot.Job, o.Slot.At.UnixMicro(), o.Slot.Manual}] = o.Notice
		}
	}
	if len(by) == 0 {
		return nil
	}
	for _, r := range res {
		if n := by[key{r.Run.Job, r.Run.ScheduledAt.UnixMicro(), r.Run.Manual}]; n != nil && r.Written {
			if err := queueNotice(ctx, tx, token, now, r.Run.Key(), n); err != nil {
				return err
			}
		}
	}
	return nil
}

// liteDeadNoticeInsert queues a message of the notice of the dead message
// $1, on its slot, when the transaction's record made it dead under the
// claim of token $2.
const liteDeadNoticeInsert = `INSERT INTO outbox (key, job, scheduled_at, manual, token, kind, destination,
		subject, body, next_attempt_at, created_at, updated_at)
	SELECT $3, d.job, d.scheduled_at, d.manual, $2, $4, $5, $6, $7, $8, $8, $8
	FROM outbox AS d WHERE d.key = $1 AND d.status = 'dead' AND d.claim_token = $2
	ON CONFLICT (key) DO NOTHING`

// queueDeadNotice queues the messages of n, the notice of the dead message key.
func queueDeadNotice(ctx context.Context, tx *sql.Tx, token int64, key string, at time.Time, n *scheduler.Notice) error {
	if n == nil {
		return nil
	}
	for _, m := range n.Messages {
		if _, err := tx.ExecContext(ctx, liteDeadNoticeInsert, key, token, m.Key, string(m.Kind), m.Destination,
			tables.CleanText(m.Subject), tables.CleanText(m.Body), at.UnixMicro()); err != nil {
			return err
		}
	}
	return nil
}
