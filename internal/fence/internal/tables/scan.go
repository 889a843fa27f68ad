package tables

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"scheduler"
)

// RowScanner is a row of either store: pgx's rows and rows of database/sql.
type RowScanner interface{ Scan(dest ...any) error }

// Time is a time column of either store, so that one scan serves both: a
// Postgres timestamptz, or the Unix microseconds SQLite keeps. NULL leaves
// it invalid.
type Time struct {
	T     time.Time
	Valid bool
}

// ScanTimestamptz is how pgx fills it, without going through database/sql's
// values.
func (d *Time) ScanTimestamptz(v pgtype.Timestamptz) error {
	d.T, d.Valid = v.Time.UTC(), v.Valid
	return nil
}

// Scan is how database/sql fills it.
func (d *Time) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d = Time{}
	case int64:
		d.T, d.Valid = time.UnixMicro(v).UTC(), true
	case time.Time:
		d.T, d.Valid = v.UTC(), true
	default:
		return fmt.Errorf("time column: unexpected %T", src)
	}
	return nil
}

// Ptr returns the time, or nil for NULL.
func (d Time) Ptr() *time.Time {
	if !d.Valid {
		return nil
	}
	return &d.T
}

// The columns of a run that ScanRun reads, in order: KeyCols are a run's key
// (see scheduler.Result), RunCols every column. Postgres statements use them
// qualified with r. (PrefixCols).
const (
	KeyCols = `run_id, job, scheduled_at, manual, status, token, attempt`
	RunCols = KeyCols + `, node, started_at, finished_at, error, output, reason, backfill`
)

// ScanRun reads the columns of RunCols, or of KeyCols unless full.
func ScanRun(row RowScanner, full bool) (scheduler.Run, error) {
	var (
		r                     scheduler.Run
		status                string
		at, started, finished Time
	)
	dest := []any{&r.RunID, &r.Job, &at, &r.Manual, &status, &r.Token, &r.Attempt}
	if full {
		dest = append(dest, &r.Node, &started, &finished, &r.Error, &r.Output, &r.Reason, &r.BackfillID)
	}
	if err := row.Scan(dest...); err != nil {
		return scheduler.Run{}, fmt.Errorf("scan run: %w", err)
	}
	r.Status = scheduler.Status(status)
	r.ScheduledAt = at.T
	r.StartedAt, r.FinishedAt = started.Ptr(), finished.Ptr()
	r.Backfill = r.BackfillID != 0
	return r, nil
}

// OutboxCols are the columns ScanMessage reads, in order.
const OutboxCols = `key, job, scheduled_at, manual, token, kind, destination, subject, body,
	status, attempts, next_attempt_at, claim_token, last_error, created_at, updated_at, delivered_at`

// ScanMessage reads the columns of OutboxCols.
func ScanMessage(row RowScanner) (scheduler.Message, error) {
	var (
		m                                   scheduler.Message
		kind, status                        string
		slot, next, created, updated, deliv Time
	)
	if err := row.Scan(&m.Key, &m.Job, &slot, &m.Manual, &m.Token, &kind, &m.Destination, &m.Subject, &m.Body,
		&status, &m.Attempts, &next, &m.ClaimToken, &m.LastError, &created, &updated, &deliv); err != nil {
		return scheduler.Message{}, fmt.Errorf("scan message: %w", err)
	}
	m.Kind, m.Status = scheduler.MessageKind(kind), scheduler.MessageStatus(status)
	m.ScheduledAt, m.NextAttempt, m.Created, m.Updated, m.Delivered = slot.T, next.T, created.T, updated.T, deliv.T
	return m, nil
}

// CollectSQL reads and closes rows of database/sql with scan.
func CollectSQL[T any](rows *sql.Rows, scan func(RowScanner) (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			_ = rows.Close()
			return nil, err
		}
		out = append(out, v)
	}
	return out, errors.Join(rows.Err(), rows.Close())
}

// PrefixCols qualifies every column of cols with prefix.
func PrefixCols(prefix, cols string) string {
	fields := strings.Split(cols, ",")
	for i, f := range fields {
		fields[i] = prefix + strings.TrimSpace(f)
	}
	return strings.Join(fields, ", ")
}
