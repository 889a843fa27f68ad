package control

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The statements of the backfill requests in control_backfill (migration
// 00011), with the schema's quoted table name for {t}.
const (
	pgSubmitBackfill = `INSERT INTO {t} (job, id, request) VALUES ($1, $2, $3) ON CONFLICT (job, id) DO NOTHING`
	pgBackfills      = `SELECT job, id, request FROM {t} ORDER BY id, job`
	pgBackfill       = `SELECT job, id, request FROM {t} WHERE job = $1 AND id = $2`
	pgUpdateBackfill = `UPDATE {t} SET request = $3 WHERE job = $1 AND id = $2`
)

// backfillSQL fills in the table of q.
func (s *Postgres) backfillSQL(q string) string {
	return strings.ReplaceAll(q, "{t}", s.backfillTable)
}

// SubmitBackfill records b as a pending request, as Store.SubmitBackfill does.
func (s *Postgres) SubmitBackfill(ctx context.Context, b Backfill) (Backfill, error) {
	b.State = BackfillPending
	b, v, err := encodeBackfill("submit", b, s.now())
	if err != nil {
		return Backfill{}, err
	}
	tag, err := s.pool.Exec(ctx, s.backfillSQL(pgSubmitBackfill), b.Job, b.ID, v)
	if err != nil {
		return Backfill{}, fmt.Errorf("submit backfill %d of %q: %w", b.ID, b.Job, err)
	}
	if tag.RowsAffected() == 0 {
		return Backfill{}, fmt.Errorf("submit backfill %d of %q: %w", b.ID, b.Job, ErrBackfillExists)
	}
	return b, nil
}

// Backfills returns the backfill requests, finished ones included, oldest first.
func (s *Postgres) Backfills(ctx context.Context) ([]Backfill, error) {
	rows, err := s.pool.Query(ctx, s.backfillSQL(pgBackfills))
	if err != nil {
		return nil, fmt.Errorf("list backfill requests: %w", err)
	}
	bs, err := collectBackfills(rows)
	if err != nil {
		return nil, fmt.Errorf("list backfill requests: %w", err)
	}
	sortBackfills(bs)
	return bs, nil
}

// Backfill returns the request of job with id; ok is false when there is none.
func (s *Postgres) Backfill(ctx context.Context, job string, id int64) (Backfill, bool, error) {
	if err := checkBackfill(job, id); err != nil {
		return Backfill{}, false, err
	}
	rows, err := s.pool.Query(ctx, s.backfillSQL(pgBackfill), job, id)
	if err != nil {
		return Backfill{}, false, fmt.Errorf("read backfill %d of %q: %w", id, job, err)
	}
	bs, err := collectBackfills(rows)
	if err != nil || len(bs) == 0 {
		return Backfill{}, false, err
	}
	return bs[0], true, nil
}

// UpdateBackfill stores the leader's progress of b, as Store.UpdateBackfill does.
func (s *Postgres) UpdateBackfill(ctx context.Context, b Backfill) error {
	_, v, err := encodeBackfill("update", b, s.now())
	if err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, s.backfillSQL(pgUpdateBackfill), b.Job, b.ID, v); err != nil {
		return fmt.Errorf("update backfill %d of %q: %w", b.ID, b.Job, err)
	}
	return nil
}

// collectBackfills reads rows of (job, id, request); a request that does not
// parse keeps its job and id only, with Unreadable set.
func collectBackfills(rows pgx.Rows) ([]Backfill, error) {
	var (
		bs  []Backfill
		job string
		id  int64
		v   []byte
	)
	_, err := pgx.ForEachRow(rows, []any{&job, &id, &v}, func() error {
		var b Backfill
		if err := json.Unmarshal(v, &b); err != nil {
			b = Backfill{Unreadable: fmt.Sprintf("backfill %d of %q: value does not parse: %v", id, job, err)}
		}
		b.Job, b.ID = job, id
		bs = append(bs, b)
		return nil
	})
	return bs, err
}
