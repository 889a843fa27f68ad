package fence

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"scheduler"
)

// rowScanner is a row of either store: pgx's rows and rows of database/sql.
type rowScanner interface{ Scan(dest ...any) error }

// dbTime is a time column of either store, so that one scan serves both: a
// Postgres timestamptz, or the Unix microseconds SQLite keeps. NULL leaves
// it invalid.
type dbTime struct {
	t     time.Time
	valid bool
}

// ScanTimestamptz is how pgx fills it, without going through database/sql's
// values.
func (d *dbTime) ScanTimestamptz(v pgtype.Timestamptz) error {
	d.t, d.valid = v.Time.UTC(), v.Valid
	return nil
}

// Scan is how database/sql fills it.
func (d *dbTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d = dbTime{}
	case int64:
		d.t, d.valid = time.UnixMicro(v).UTC(), true
	case time.Time:
		d.t, d.valid = v.UTC(), true
	default:
		return fmt.Errorf("time column: unexpected %T", src)
	}
	return nil
}

func (d dbTime) ptr() *time.Time {
	if !d.valid {
		return nil
	}
	return &d.t
}

// The columns of a run that scanRun reads, in order: keyCols are a run's key
// (see scheduler.Result), runCols every column. Postgres statements use them
// qualified with r. (prefixCols).
const (
	keyCols = `run_id, job, scheduled_at, manual, status, token, attempt`
	runCols = keyCols + `, node, started_at, finished_at, error, output, reason`
)

// scanRun reads the columns of runCols, or of keyCols unless full.
func scanRun(row rowScanner, full bool) (scheduler.Run, error) {
	var (
		r                     scheduler.Run
		status                string
		at, started, finished dbTime
	)
	dest := []any{&r.RunID, &r.Job, &at, &r.Manual, &status, &r.Token, &r.Attempt}
	if full {
		dest = append(dest, &r.Node, &started, &finished, &r.Error, &r.Output, &r.Reason)
	}
	if err := row.Scan(dest...); err != nil {
		return scheduler.Run{}, fmt.Errorf("scan run: %w", err)
	}
	r.Status = scheduler.Status(status)
	r.ScheduledAt = at.t
	r.StartedAt, r.FinishedAt = started.ptr(), finished.ptr()
	return r, nil
}

// pgRun and pgKeyRun are scanRun for pgx.CollectRows.
func pgRun(row pgx.CollectableRow) (scheduler.Run, error)    { return scanRun(row, true) }
func pgKeyRun(row pgx.CollectableRow) (scheduler.Run, error) { return scanRun(row, false) }

// outboxCols are the columns scanMessage reads, in order.
const outboxCols = `key, job, scheduled_at, manual, token, kind, destination, subject, body,
	status, attempts, next_attempt_at, claim_token, last_error, created_at, updated_at, delivered_at`

// scanMessage reads the columns of outboxCols.
func scanMessage(row rowScanner) (scheduler.Message, error) {
	var (
		m                                   scheduler.Message
		kind, status                        string
		slot, next, created, updated, deliv dbTime
	)
	if err := row.Scan(&m.Key, &m.Job, &slot, &m.Manual, &m.Token, &kind, &m.Destination, &m.Subject, &m.Body,
		&status, &m.Attempts, &next, &m.ClaimToken, &m.LastError, &created, &updated, &deliv); err != nil {
		return scheduler.Message{}, fmt.Errorf("scan message: %w", err)
	}
	m.Kind, m.Status = scheduler.MessageKind(kind), scheduler.MessageStatus(status)
	m.ScheduledAt, m.NextAttempt, m.Created, m.Updated, m.Delivered = slot.t, next.t, created.t, updated.t, deliv.t
	return m, nil
}

// pgMessage is scanMessage for pgx.CollectRows.
func pgMessage(row pgx.CollectableRow) (scheduler.Message, error) { return scanMessage(row) }

// collectSQL reads and closes rows of database/sql with scan.
func collectSQL[T any](rows *sql.Rows, scan func(rowScanner) (T, error)) ([]T, error) {
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
