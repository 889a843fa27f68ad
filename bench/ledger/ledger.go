// Package ledger adapts the store to the runner for the benchmarks: the same translation as the
// daemon's adapter, plus the batched operations the benchmarks compare with it (a Window over
// many jobs in one query, and CompleteMany).
package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite" // the SQLite driver of the batched Window

	"scheduler/internal/fence"
	"scheduler/internal/jobs"
)

var (
	_ jobs.Ledger         = (*Ledger)(nil)
	_ jobs.BatchCompleter = Batched{}
	_ jobs.BatchReclaimer = Batched{}
)

// Ledger is the store as the runner's ledger, translated exactly as the daemon does it: Window
// reads one job at a time.
type Ledger struct{ S *fence.Store }

// Batched is Ledger with CompleteMany, and with a Window that reads every job in one query and
// a ReclaimMany that takes over many orphans in one fenced transaction, both through its own
// connection to the same database (on SQLite ReclaimMany reclaims one run at a time).
type Batched struct {
	*Ledger
	window func(ctx context.Context, jobs []string, from, to time.Time) ([]jobs.LedgerRun, error)
	pool   *pgxpool.Pool // nil on SQLite
	close  func()
}

// Unbatched hides the optional batch methods of l, so the runner completes runs one at a time.
type Unbatched struct{ jobs.Ledger }

// Open returns the batched ledger of s, whose Postgres DSN is dsn or, when dsn is empty, whose
// SQLite file is path.
func Open(ctx context.Context, s *fence.Store, dsn, path string) (Batched, error) {
	b := Batched{Ledger: &Ledger{S: s}}
	if dsn != "" {
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			return b, fmt.Errorf("connect for the batched window: %w", err)
		}
		b.window, b.pool, b.close = pgWindow(pool), pool, pool.Close
		return b, nil
	}
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	if err != nil {
		return b, fmt.Errorf("open %s for the batched window: %w", path, err)
	}
	b.window, b.close = liteWindow(db), func() { _ = db.Close() }
	return b, nil
}

// Close releases the batched window's connections.
func (b Batched) Close() { b.close() }

// Window returns the scheduled runs of jobs with slots in [from, to], in one query.
func (b Batched) Window(ctx context.Context, names []string, from, to time.Time) ([]jobs.LedgerRun, error) {
	return b.window(ctx, names, from, to)
}

// CompleteMany finishes many runs in one fenced round trip.
func (b Batched) CompleteMany(ctx context.Context, token int64, cs []jobs.Completion) ([]bool, error) {
	in := make([]fence.Completion, len(cs))
	for i, c := range cs {
		in[i] = fence.Completion{RunID: c.RunID, Job: c.Job, Status: fence.Status(c.Status), Error: c.Error, Output: c.Output, Reason: c.Reason, Attempt: c.Attempt}
	}
	res, err := b.S.CompleteMany(ctx, token, in)
	if err != nil {
		return nil, fencedErr(err)
	}
	done := make([]bool, len(res))
	for i, r := range res {
		done[i] = r.Written
	}
	return done, nil
}

// ReclaimMany takes over many orphans in one transaction that first enters their jobs' fences
// (the store's fence_check_all), as the store's own writes do.
func (b Batched) ReclaimMany(ctx context.Context, token int64, node string, slots []jobs.SlotKey) ([]jobs.LedgerRun, []bool, error) {
	runs := make([]jobs.LedgerRun, len(slots))
	taken := make([]bool, len(slots))
	if b.pool == nil {
		for i, sl := range slots {
			r, err := b.Reclaim(ctx, token, node, sl)
			if errors.Is(err, jobs.ErrFenced) {
				return nil, nil, err
			}
			runs[i], taken[i] = r, err == nil
		}
		return runs, taken, nil
	}
	sorted := slices.Clone(slots)
	slices.SortFunc(sorted, func(a, b jobs.SlotKey) int { return strings.Compare(a.Job, b.Job) })
	names := make([]string, len(sorted))
	ats := make([]time.Time, len(sorted))
	manual := make([]bool, len(sorted))
	for i, sl := range sorted {
		names[i], ats[i], manual[i] = sl.Job, sl.At.UTC().Truncate(time.Microsecond), sl.Manual
	}
	type key struct {
		job    string
		at     int64
		manual bool
	}
	got := map[key]jobs.LedgerRun{}
	err := pgx.BeginTxFunc(ctx, b.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT scheduler.fence_check_all($1::text[], $2)`, names, token); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `UPDATE scheduler.runs AS r
			SET token = $4, node = $5, attempt = r.attempt + 1, started_at = now()
			FROM unnest($1::text[], $2::timestamptz[], $3::boolean[]) AS i(job, at, manual)
			WHERE r.job = i.job AND r.scheduled_at = i.at AND r.manual = i.manual
				AND r.status = 'running' AND r.token <> $4
			RETURNING r.run_id, r.job, r.scheduled_at, r.manual, r.status, r.token, r.attempt`,
			names, ats, manual, token, node)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				r      jobs.LedgerRun
				status string
			)
			if err := rows.Scan(&r.RunID, &r.Slot.Job, &r.Slot.At, &r.Slot.Manual, &status, &r.Token, &r.Attempt); err != nil {
				return err
			}
			r.Status, r.Slot.At = jobs.Status(status), r.Slot.At.UTC()
			got[key{r.Slot.Job, r.Slot.At.UnixMicro(), r.Slot.Manual}] = r
		}
		return rows.Err()
	})
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "JF001" {
			return nil, nil, fmt.Errorf("reclaim %d runs with token %d: %w: %w", len(slots), token, jobs.ErrFenced, err)
		}
		return nil, nil, fmt.Errorf("reclaim %d runs with token %d: %w", len(slots), token, err)
	}
	for i, sl := range slots {
		r, ok := got[key{sl.Job, sl.At.UTC().Truncate(time.Microsecond).UnixMicro(), sl.Manual}]
		runs[i], taken[i] = r, ok
	}
	return runs, taken, nil
}

func pgWindow(pool *pgxpool.Pool) func(ctx context.Context, names []string, from, to time.Time) ([]jobs.LedgerRun, error) {
	return func(ctx context.Context, names []string, from, to time.Time) ([]jobs.LedgerRun, error) {
		rows, err := pool.Query(ctx, `SELECT run_id, job, scheduled_at, status, token, attempt FROM scheduler.runs
			WHERE job = ANY($1::text[]) AND scheduled_at BETWEEN $2 AND $3 AND NOT manual`, names, from, to)
		if err != nil {
			return nil, fmt.Errorf("window of %d jobs: %w", len(names), err)
		}
		defer rows.Close()
		var out []jobs.LedgerRun
		for rows.Next() {
			var (
				r      jobs.LedgerRun
				status string
			)
			if err := rows.Scan(&r.RunID, &r.Slot.Job, &r.Slot.At, &status, &r.Token, &r.Attempt); err != nil {
				return nil, fmt.Errorf("window of %d jobs: %w", len(names), err)
			}
			r.Status, r.Slot.At = jobs.Status(status), r.Slot.At.UTC()
			out = append(out, r)
		}
		return out, rows.Err()
	}
}

func liteWindow(db *sql.DB) func(ctx context.Context, names []string, from, to time.Time) ([]jobs.LedgerRun, error) {
	return func(ctx context.Context, names []string, from, to time.Time) ([]jobs.LedgerRun, error) {
		want := make(map[string]bool, len(names))
		for _, n := range names {
			want[n] = true
		}
		rows, err := db.QueryContext(ctx, `SELECT run_id, job, scheduled_at, status, token, attempt FROM runs
			WHERE scheduled_at BETWEEN $1 AND $2 AND manual = 0`, from.UnixMicro(), to.UnixMicro())
		if err != nil {
			return nil, fmt.Errorf("window of %d jobs: %w", len(names), err)
		}
		defer func() { _ = rows.Close() }()
		var out []jobs.LedgerRun
		for rows.Next() {
			var (
				r      jobs.LedgerRun
				at     int64
				status string
			)
			if err := rows.Scan(&r.RunID, &r.Slot.Job, &at, &status, &r.Token, &r.Attempt); err != nil {
				return nil, fmt.Errorf("window of %d jobs: %w", len(names), err)
			}
			if want[r.Slot.Job] {
				r.Status, r.Slot.At = jobs.Status(status), time.UnixMicro(at).UTC()
				out = append(out, r)
			}
		}
		return out, rows.Err()
	}
}

// fencedErr marks a stale-token refusal of the store as jobs.ErrFenced.
func fencedErr(err error) error {
	if errors.Is(err, fence.ErrStale) {
		return fmt.Errorf("%w: %w", jobs.ErrFenced, err)
	}
	return err
}

func toSlot(k jobs.SlotKey) fence.Slot { return fence.Slot{Job: k.Job, At: k.At, Manual: k.Manual} }

func toRun(r fence.Run) jobs.LedgerRun {
	return jobs.LedgerRun{
		RunID:   r.RunID,
		Slot:    jobs.SlotKey{Job: r.Job, At: r.ScheduledAt, Manual: r.Manual},
		Status:  jobs.Status(r.Status),
		Token:   r.Token,
		Attempt: r.Attempt,
	}
}

// RaiseAll raises the fences of names to token.
func (l *Ledger) RaiseAll(ctx context.Context, names []string, token int64) error {
	return fencedErr(l.S.RaiseAll(ctx, names, token))
}

// ClaimMany claims slots in one fenced round trip.
func (l *Ledger) ClaimMany(ctx context.Context, token int64, node string, slots []jobs.SlotKey) ([]jobs.Claimed, error) {
	in := make([]fence.Slot, len(slots))
	for i, s := range slots {
		in[i] = toSlot(s)
	}
	res, err := l.S.ClaimMany(ctx, token, node, in)
	if err != nil {
		return nil, fencedErr(err)
	}
	out := make([]jobs.Claimed, len(res))
	for i, r := range res {
		out[i] = jobs.Claimed{Run: toRun(r.Run), Written: r.Written}
	}
	return out, nil
}

// Reclaim takes over an orphaned run.
func (l *Ledger) Reclaim(ctx context.Context, token int64, node string, slot jobs.SlotKey) (jobs.LedgerRun, error) {
	r, err := l.S.Reclaim(ctx, token, node, toSlot(slot))
	return toRun(r), fencedErr(err)
}

// RecordMany stores slots that end without running.
func (l *Ledger) RecordMany(ctx context.Context, token int64, node string, outs []jobs.Outcome) error {
	in := make([]fence.Outcome, len(outs))
	for i, o := range outs {
		in[i] = fence.Outcome{Slot: toSlot(o.Slot), Status: fence.Status(o.Status), Reason: o.Reason}
	}
	_, err := l.S.RecordMany(ctx, token, node, in)
	return fencedErr(err)
}

// Complete finishes a running run.
func (l *Ledger) Complete(ctx context.Context, token int64, c jobs.Completion) error {
	_, err := l.S.Complete(ctx, token, fence.Completion{
		RunID: c.RunID, Job: c.Job, Status: fence.Status(c.Status), Error: c.Error, Output: c.Output, Reason: c.Reason,
	})
	return fencedErr(err)
}

// NextAttempt records a retry.
func (l *Ledger) NextAttempt(ctx context.Context, token int64, job string, runID int64) (int, error) {
	n, err := l.S.NextAttempt(ctx, token, job, runID)
	return n, fencedErr(err)
}

// Window reads the runs of the window one job at a time, as the daemon's adapter does.
func (l *Ledger) Window(ctx context.Context, names []string, from, to time.Time) ([]jobs.LedgerRun, error) {
	var out []jobs.LedgerRun
	for _, name := range names {
		runs, err := l.S.Window(ctx, name, from, to)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			out = append(out, toRun(r))
		}
	}
	return out, nil
}

// Last returns the newest run of each job.
func (l *Ledger) Last(ctx context.Context, names []string) (map[string]jobs.LedgerRun, error) {
	last, err := l.S.Last(ctx, names...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]jobs.LedgerRun, len(last))
	for k, r := range last {
		out[k] = toRun(r)
	}
	return out, nil
}

// Orphans returns the runs left running by older terms.
func (l *Ledger) Orphans(ctx context.Context, names []string) ([]jobs.LedgerRun, error) {
	runs, err := l.S.Orphans(ctx, names...)
	if err != nil {
		return nil, err
	}
	out := make([]jobs.LedgerRun, len(runs))
	for i, r := range runs {
		out[i] = toRun(r)
	}
	return out, nil
}
