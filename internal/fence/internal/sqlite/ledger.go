package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
	"scheduler/internal/fence/internal/verdict"
)

// The ledger on SQLite: the same statements as on Postgres, one row at a
// time inside one IMMEDIATE transaction, as a loop costs no round trips
// here. Times are Unix microseconds.

// The statements of the write loops, each prepared once per transaction.
const (
	liteSlotRow = `SELECT ` + tables.KeyCols + ` FROM runs WHERE job = $1 AND scheduled_at = $2 AND manual = $3`
	liteClaim   = `INSERT INTO runs (job, scheduled_at, manual, status, token, node, attempt, started_at)
		VALUES ($1, $2, $3, 'running', $4, $5, 1, MAX($6, $2))
		ON CONFLICT (job, scheduled_at, manual) DO NOTHING
		RETURNING ` + tables.KeyCols
	// A claim ahead: the run has not started, it has no attempt and no start time.
	liteClaimAhead = `INSERT INTO runs (job, scheduled_at, manual, status, token, node, attempt)
		VALUES ($1, $2, $3, 'running', $4, $5, 0)
		ON CONFLICT (job, scheduled_at, manual) DO NOTHING
		RETURNING ` + tables.KeyCols
	liteRecord = `INSERT INTO runs (job, scheduled_at, manual, status, token, node, attempt, finished_at, reason)
		VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8)
		ON CONFLICT (job, scheduled_at, manual) DO NOTHING
		RETURNING ` + tables.KeyCols
	liteReclaim = `UPDATE runs SET token = $4, node = $5, attempt = attempt + 1, started_at = MAX($6, scheduled_at)
		WHERE job = $1 AND scheduled_at = $2 AND manual = $3 AND status = 'running' AND token < $4
		RETURNING ` + tables.KeyCols
	liteComplete = `UPDATE runs SET status = $3, finished_at = $4, error = $5, output = $6, reason = $7,
		attempt = MAX(attempt, $8), started_at = CASE WHEN started_at IS NULL AND $8 > 0 THEN MIN(scheduled_at, $4)
			WHEN started_at > $4 THEN $4 ELSE started_at END
		WHERE run_id = $1 AND job = $2 AND status = 'running'
		RETURNING ` + tables.RunCols
	liteStart = `UPDATE runs SET attempt = MAX(attempt, 1), started_at = $3
		WHERE run_id = $1 AND job = $2 AND status = 'running' AND started_at IS NULL AND token = $4`
	liteRunRow = `SELECT ` + tables.RunCols + ` FROM runs WHERE run_id = $1`
)

// writeOrRead runs in tx, for each of n items, write, a statement that
// returns the row it wrote (if any), and, when it wrote none, read, which
// reads the item's row; an item without a row is left out. Rows are read
// with scanRun (full or the key). Both statements are prepared once for
// the whole loop.
func writeOrRead(ctx context.Context, tx *sql.Tx, write, read string, full bool, n int,
	args func(i int) (writeArgs, readArgs []any)) ([]scheduler.Result, error) {
	w, err := tx.PrepareContext(ctx, write)
	if err != nil {
		return nil, err
	}
	defer func() { _ = w.Close() }()
	sel, err := tx.PrepareContext(ctx, read)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sel.Close() }()
	res := make([]scheduler.Result, 0, n)
	for i := range n {
		wa, ra := args(i)
		r, err := tables.ScanRun(w.QueryRowContext(ctx, wa...), full)
		if err == nil {
			res = append(res, scheduler.Result{Run: r, Written: true})
			continue
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		r, err = tables.ScanRun(sel.QueryRowContext(ctx, ra...), full)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue
		case err != nil:
			return nil, err
		}
		res = append(res, scheduler.Result{Run: r})
	}
	return res, nil
}

// slotWrite runs write for each slot, with the arguments args returns,
// inside a transaction that entered the fences of the slots' jobs, and
// reads the rows of the slots it wrote none for (see writeOrRead).
func (l *Backend) slotWrite(ctx context.Context, token int64, slots []scheduler.SlotKey, write string, args func(i int) []any) ([]scheduler.Result, error) {
	var res []scheduler.Result
	err := l.fencedWrite(ctx, slotJobs(slots), token, func(tx *sql.Tx) (err error) {
		res, err = writeOrRead(ctx, tx, write, liteSlotRow, false, len(slots), func(i int) ([]any, []any) {
			s := slots[i]
			return args(i), []any{s.Job, s.At.UnixMicro(), s.Manual}
		})
		return err
	})
	return res, err
}

// Claim creates the runs of slots in one fenced write; ahead leaves them not
// started (attempt 0, no start time).
func (l *Backend) Claim(ctx context.Context, token int64, node string, now time.Time, slots []scheduler.SlotKey, ahead bool) ([]scheduler.Result, error) {
	if ahead {
		return l.slotWrite(ctx, token, slots, liteClaimAhead, func(i int) []any {
			s := slots[i]
			return []any{s.Job, s.At.UnixMicro(), s.Manual, token, node}
		})
	}
	return l.slotWrite(ctx, token, slots, liteClaim, func(i int) []any {
		s := slots[i]
		return []any{s.Job, s.At.UnixMicro(), s.Manual, token, node, now.UnixMicro()}
	})
}

// Start marks the not-started runs among refs as started at now and
// returns how many it marked.
func (l *Backend) Start(ctx context.Context, token int64, now time.Time, refs []scheduler.RunRef) (int, error) {
	jobs := make([]string, len(refs))
	for i, r := range refs {
		jobs[i] = r.Job
	}
	marked := 0
	err := l.fencedWrite(ctx, jobs, token, func(tx *sql.Tx) error {
		marked = 0
		upd, err := tx.PrepareContext(ctx, liteStart)
		if err != nil {
			return err
		}
		defer func() { _ = upd.Close() }()
		for _, r := range refs {
			res, err := upd.ExecContext(ctx, r.RunID, r.Job, now.UnixMicro(), token)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			marked += int(n)
		}
		return nil
	})
	return marked, err
}

// Record stores slots that ended without running, with their reasons.
func (l *Backend) Record(ctx context.Context, token int64, node string, now time.Time, outs []scheduler.Outcome) ([]scheduler.Result, error) {
	slots := make([]scheduler.SlotKey, len(outs))
	for i, o := range outs {
		slots[i] = o.Slot
	}
	args := func(i int) []any {
		o := outs[i]
		return []any{o.Slot.Job, o.Slot.At.UnixMicro(), o.Slot.Manual, string(o.Status), token, node, now.UnixMicro(), o.Reason}
	}
	if !slices.ContainsFunc(outs, func(o scheduler.Outcome) bool { return o.Notice != nil }) {
		return l.slotWrite(ctx, token, slots, liteRecord, args)
	}
	var res []scheduler.Result
	err := l.fencedWrite(ctx, slotJobs(slots), token, func(tx *sql.Tx) (err error) {
		res, err = writeOrRead(ctx, tx, liteRecord, liteSlotRow, false, len(slots), func(i int) ([]any, []any) {
			s := slots[i]
			return args(i), []any{s.Job, s.At.UnixMicro(), s.Manual}
		})
		if err != nil {
			return err
		}
		return recordNotices(ctx, tx, token, now, outs, res)
	})
	return res, err
}

// Reclaim takes over the orphans among slots and returns the runs of the
// slots that have one, each with whether it took it over.
func (l *Backend) Reclaim(ctx context.Context, token int64, node string, now time.Time, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	return l.slotWrite(ctx, token, slots, liteReclaim, func(i int) []any {
		s := slots[i]
		return []any{s.Job, s.At.UnixMicro(), s.Manual, token, node, now.UnixMicro()}
	})
}

// Complete finishes the running runs among cs and returns every run of cs
// that exists, each with whether it finished it.
func (l *Backend) Complete(ctx context.Context, token int64, now time.Time, cs []scheduler.Completion) ([]scheduler.Result, error) {
	jobs := make([]string, len(cs))
	for i, c := range cs {
		jobs[i] = c.Job
	}
	var res []scheduler.Result
	err := l.fencedWrite(ctx, jobs, token, func(tx *sql.Tx) (err error) {
		res, err = writeOrRead(ctx, tx, liteComplete, liteRunRow, true, len(cs), func(i int) ([]any, []any) {
			c := cs[i]
			return []any{c.RunID, c.Job, string(c.Status), now.UnixMicro(), c.Error, c.Output, c.Reason, c.Attempt},
				[]any{c.RunID}
		})
		if err != nil {
			return err
		}
		return completeNotices(ctx, tx, token, now, cs, res)
	})
	return res, err
}

// NextAttempt increases the attempt of a run running under token.
func (l *Backend) NextAttempt(ctx context.Context, token int64, job string, runID int64) (int, error) {
	attempt := 0
	err := l.fencedWrite(ctx, []string{job}, token, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE runs SET attempt = attempt + 1
			WHERE run_id = $1 AND job = $2 AND status = 'running' AND token = $3
			RETURNING attempt`, runID, job, token).Scan(&attempt)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("run %d is not running under token %d: %w", runID, token, verdict.ErrNotRunning)
		}
		return err
	})
	return attempt, err
}

// queryRuns reads the runs a query returns, every column or the key.
func (l *Backend) queryRuns(ctx context.Context, full bool, query string, args ...any) ([]scheduler.Run, error) {
	rows, err := l.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return tables.CollectSQL(rows, func(row tables.RowScanner) (scheduler.Run, error) { return tables.ScanRun(row, full) })
}

// Window returns the keys of the scheduled runs of jobs with slots in [from, to].
func (l *Backend) Window(ctx context.Context, jobs []string, from, to time.Time) ([]scheduler.Run, error) {
	list, err := json.Marshal(jobs)
	if err != nil {
		return nil, err
	}
	return l.queryRuns(ctx, false, `SELECT `+tables.KeyCols+` FROM runs
		WHERE job IN (SELECT value FROM json_each($1)) AND scheduled_at BETWEEN $2 AND $3 AND manual = 0`,
		string(list), from.UnixMicro(), to.UnixMicro())
}

// History returns job's newest limit runs, newest slot first.
func (l *Backend) History(ctx context.Context, job string, limit int) ([]scheduler.Run, error) {
	return l.queryRuns(ctx, true, `SELECT `+tables.RunCols+` FROM runs WHERE job = $1
		ORDER BY scheduled_at DESC, manual DESC LIMIT $2`, job, limit)
}

// Last returns the newest run of each job of jobs, or of every job when empty.
func (l *Backend) Last(ctx context.Context, jobs []string) ([]scheduler.Run, error) {
	if len(jobs) == 0 {
		var err error
		if jobs, err = l.ledgerJobs(ctx); err != nil {
			return nil, err
		}
	}
	var runs []scheduler.Run
	for _, j := range tables.Distinct(jobs) {
		rs, err := l.History(ctx, j, 1)
		if err != nil {
			return nil, err
		}
		runs = append(runs, rs...)
	}
	return runs, nil
}

// LastScheduled returns the newest run of a scheduled slot (not manual) of
// each job of jobs.
func (l *Backend) LastScheduled(ctx context.Context, jobs []string) ([]scheduler.Run, error) {
	var runs []scheduler.Run
	for _, j := range tables.Distinct(jobs) {
		rs, err := l.queryRuns(ctx, true, `SELECT `+tables.RunCols+` FROM runs WHERE job = $1 AND NOT manual
			ORDER BY scheduled_at DESC LIMIT 1`, j)
		if err != nil {
			return nil, err
		}
		runs = append(runs, rs...)
	}
	return runs, nil
}

// ledgerJobs returns the jobs that have runs.
func (l *Backend) ledgerJobs(ctx context.Context) ([]string, error) {
	rows, err := l.r.QueryContext(ctx, `SELECT DISTINCT job FROM runs`)
	if err != nil {
		return nil, err
	}
	return tables.CollectSQL(rows, func(row tables.RowScanner) (j string, err error) { return j, row.Scan(&j) })
}

// Orphans returns the runs left running under a token other than their
// job's fence, of jobs or of every job when empty, oldest slot first.
func (l *Backend) Orphans(ctx context.Context, jobs []string) ([]scheduler.Run, error) {
	runs, err := l.queryRuns(ctx, true, `SELECT `+tables.PrefixCols("r.", tables.RunCols)+` FROM runs AS r
		LEFT JOIN job_fence AS f ON f.job = r.job
		WHERE r.status = 'running' AND (f.token IS NULL OR r.token <> f.token)
		ORDER BY r.scheduled_at, r.run_id`)
	if err != nil || len(jobs) == 0 {
		return runs, err
	}
	want := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		want[j] = true
	}
	out := runs[:0]
	for _, r := range runs {
		if want[r.Job] {
			out = append(out, r)
		}
	}
	return out, nil
}

func slotJobs(slots []scheduler.SlotKey) []string {
	jobs := make([]string, len(slots))
	for i, s := range slots {
		jobs[i] = s.Job
	}
	return jobs
}
