package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
	"scheduler/internal/fence/internal/verdict"
)

// ledgerStatements are the ledger's Postgres statements. Every write is one
// batch: BEGIN, the fence check of the jobs involved, the write (returning
// what it wrote), a read of the other rows concerned (a new statement, so
// it sees rows that a concurrent claimer committed while the write waited
// for it) and COMMIT, in one round trip.
type ledgerStatements struct {
	claim, record, slotRows, reclaim, complete, runRows, nextAttempt       string
	window, history, lastOf, lastAll, lastScheduled, orphansOf, orphansAll string
	claimAhead, start                                                      string // claims ahead and their start
}

func pgLedgerSQL(r *strings.Replacer) ledgerStatements {
	q := func(s string) string {
		return r.Replace(strings.NewReplacer("{cols}", tables.PrefixCols("r.", tables.RunCols), "{keycols}", tables.PrefixCols("r.", tables.KeyCols)).Replace(s))
	}
	return ledgerStatements{
		claim: q(`INSERT INTO {s}.runs AS r (job, scheduled_at, manual, status, token, node, attempt, started_at)
			SELECT i.job, i.at, i.manual, 'running', $4, $5, 1, GREATEST($6::timestamptz, i.at)
			FROM unnest($1::text[], $2::timestamptz[], $3::boolean[]) AS i(job, at, manual)
			ON CONFLICT ON CONSTRAINT runs_slot_key DO NOTHING
			RETURNING {keycols}`),
		// A claim ahead: the run has not started, it has no attempt and no start time.
		claimAhead: q(`INSERT INTO {s}.runs AS r (job, scheduled_at, manual, status, token, node, attempt)
			SELECT i.job, i.at, i.manual, 'running', $4, $5, 0
			FROM unnest($1::text[], $2::timestamptz[], $3::boolean[]) AS i(job, at, manual)
			ON CONFLICT ON CONSTRAINT runs_slot_key DO NOTHING
			RETURNING {keycols}`),
		record: q(`INSERT INTO {s}.runs AS r (job, scheduled_at, manual, status, token, node, attempt, finished_at, reason)
			SELECT i.job, i.at, i.manual, i.status, $6, $7, 0, $8, i.reason
			FROM unnest($1::text[], $2::timestamptz[], $3::boolean[], $4::text[], $5::text[]) AS i(job, at, manual, status, reason)
			ON CONFLICT ON CONSTRAINT runs_slot_key DO NOTHING
			RETURNING {keycols}`),
		// The rows of the slots that the batch's write did not write (it
		// returned those): a row version the transaction wrote has its xid.
		slotRows: q(`SELECT {keycols} FROM {s}.runs AS r
			JOIN unnest($1::text[], $2::timestamptz[], $3::boolean[]) AS i(job, at, manual)
			ON r.job = i.job AND r.scheduled_at = i.at AND r.manual = i.manual
			WHERE r.xmin <> pg_current_xact_id()::xid`),
		reclaim: q(`UPDATE {s}.runs AS r
			SET token = $4, node = $5, attempt = r.attempt + 1, started_at = GREATEST($6::timestamptz, r.scheduled_at)
			FROM unnest($1::text[], $2::timestamptz[], $3::boolean[]) AS i(job, at, manual)
			WHERE r.job = i.job AND r.scheduled_at = i.at AND r.manual = i.manual
				AND r.status = 'running' AND r.token < $4
			RETURNING {keycols}`),
		complete: q(`UPDATE {s}.runs AS r
			SET status = c.status, finished_at = $7, error = c.error, output = c.output, reason = c.reason,
				attempt = GREATEST(r.attempt, c.attempt),
				started_at = CASE WHEN r.started_at IS NULL AND c.attempt > 0 THEN LEAST(r.scheduled_at, $7)
					WHEN r.started_at > $7 THEN $7 ELSE r.started_at END
			FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $8::integer[])
				AS c(run_id, job, status, error, output, reason, attempt)
			WHERE r.run_id = c.run_id AND r.job = c.job AND r.status = 'running'
			RETURNING r.run_id`),
		start: q(`UPDATE {s}.runs AS r SET attempt = GREATEST(r.attempt, 1), started_at = $3
			FROM unnest($1::bigint[], $2::text[]) AS i(run_id, job)
			WHERE r.run_id = i.run_id AND r.job = i.job AND r.status = 'running' AND r.started_at IS NULL AND r.token = $4
			RETURNING r.run_id`),
		runRows: q(`SELECT {cols} FROM {s}.runs AS r WHERE r.run_id = ANY($1::bigint[])`),
		nextAttempt: q(`UPDATE {s}.runs AS r SET attempt = r.attempt + 1
			WHERE r.run_id = $1 AND r.job = $2 AND r.status = 'running' AND r.token = $3
			RETURNING r.attempt`),
		window: q(`SELECT {keycols} FROM {s}.runs AS r
			WHERE r.job = ANY($1::text[]) AND r.scheduled_at BETWEEN $2 AND $3 AND NOT r.manual`),
		history: q(`SELECT {cols} FROM {s}.runs AS r WHERE r.job = $1
			ORDER BY r.scheduled_at DESC, r.manual DESC LIMIT $2`),
		// One index probe per job (a lateral LIMIT 1 on the slot key).
		lastOf: q(`SELECT l.* FROM unnest($1::text[]) AS j(job) CROSS JOIN LATERAL (
				SELECT {cols} FROM {s}.runs AS r WHERE r.job = j.job
				ORDER BY r.scheduled_at DESC, r.manual DESC LIMIT 1) AS l`),
		// The same, manual runs left out.
		lastScheduled: q(`SELECT l.* FROM unnest($1::text[]) AS j(job) CROSS JOIN LATERAL (
				SELECT {cols} FROM {s}.runs AS r WHERE r.job = j.job AND NOT r.manual
				ORDER BY r.scheduled_at DESC LIMIT 1) AS l`),
		// The distinct jobs by a loose index scan, then as lastOf.
		lastAll: q(`WITH RECURSIVE jobs(job) AS (
				(SELECT r.job FROM {s}.runs AS r ORDER BY r.job LIMIT 1)
				UNION ALL
				SELECT (SELECT r.job FROM {s}.runs AS r WHERE r.job > jobs.job ORDER BY r.job LIMIT 1)
				FROM jobs WHERE jobs.job IS NOT NULL)
			SELECT l.* FROM jobs CROSS JOIN LATERAL (
				SELECT {cols} FROM {s}.runs AS r WHERE r.job = jobs.job
				ORDER BY r.scheduled_at DESC, r.manual DESC LIMIT 1) AS l
			WHERE jobs.job IS NOT NULL`),
		orphansOf: q(`SELECT {cols} FROM {s}.runs AS r LEFT JOIN {s}.job_fence AS f ON f.job = r.job
			WHERE r.status = 'running' AND (f.token IS NULL OR r.token <> f.token) AND r.job = ANY($1::text[])
			ORDER BY r.scheduled_at, r.run_id`),
		orphansAll: q(`SELECT {cols} FROM {s}.runs AS r LEFT JOIN {s}.job_fence AS f ON f.job = r.job
			WHERE r.status = 'running' AND (f.token IS NULL OR r.token <> f.token)
			ORDER BY r.scheduled_at, r.run_id`),
	}
}

// slotArrays splits slots into the arrays the statements unnest, sorted so
// that concurrent batches insert in the same order.
func slotArrays(slots []scheduler.SlotKey) (jobs []string, ats []time.Time, manual []bool) {
	slots = slices.Clone(slots)
	slices.SortFunc(slots, func(a, b scheduler.SlotKey) int {
		if c := strings.Compare(a.Job, b.Job); c != 0 {
			return c
		}
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		switch {
		case a.Manual == b.Manual:
			return 0
		case b.Manual:
			return -1
		}
		return 1
	})
	for _, s := range slots {
		jobs = append(jobs, s.Job)
		ats = append(ats, s.At)
		manual = append(manual, s.Manual)
	}
	return jobs, ats, manual
}

// fencedBatch sends b, which begins a read-committed transaction, enters
// the fences of jobs with token and then holds the statements queued by
// queue, followed by COMMIT: one round trip. A failure rolls back.
//
// The batch waits for the fences' shared locks at most writeLockTimeout: a session outside the
// scheduler can hold a job's lock exclusively (the advisory lock functions are PUBLIC), and a
// write of the leader's that waited for it without end would hold up every job behind it. A
// batch that gave up waiting for a job's fence held so fails with verdict.Held naming the job,
// which the runner holds back alone.
func (p *Backend) fencedBatch(ctx context.Context, jobs []string, token int64, queue func(b *pgx.Batch)) error {
	jobs = tables.Distinct(jobs)
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	queueTimeouts(b, p.writeLockTimeout())
	b.Queue(p.q.checkAll, jobs, token)
	queue(b)
	b.Queue("COMMIT")
	br := p.pool.SendBatch(ctx, b)
	tx := br.Tx()
	defer func() { _ = tx.Rollback(ctx) }() // returns the connection
	if err := br.Close(); err != nil {
		raw := err
		err = pgFenceErr(token, err)
		if errors.Is(err, verdict.ErrRaiseTimeout) {
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.writeLockTimeout())
			held, lerr := p.locked(lctx, jobs)
			cancel()
			switch {
			case lerr == nil && len(held) > 0:
				return verdict.Held(held[0], err)
			case lerr == nil:
				// No fence is held: the write waited for another lock, not for an older writer.
				return fmt.Errorf("ledger write waited more than %s for a lock that is no fence's (a table or row of the store locked by another session?): %w",
					p.writeLockTimeout(), raw)
			}
		}
		return err
	}
	return nil
}

// maxWriteLockTimeout bounds writeLockTimeout: no writer of the scheduler holds a fence's
// lock exclusively for longer than a raise takes.
const maxWriteLockTimeout = time.Second

// writeLockTimeout is how long a ledger write waits for the fences' locks.
func (p *Backend) writeLockTimeout() time.Duration {
	if p.raiseTimeout > 0 && p.raiseTimeout < maxWriteLockTimeout {
		return p.raiseTimeout
	}
	return maxWriteLockTimeout
}

// collectRuns is a batch callback that appends the rows, read by scan, to
// runs.
func collectRuns(runs *[]scheduler.Run, scan pgx.RowToFunc[scheduler.Run]) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		rs, err := pgx.CollectRows(rows, scan)
		*runs = append(*runs, rs...)
		return err
	}
}

// collectIDs is a batch callback that records the returned run ids.
func collectIDs(ids map[int64]bool) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		var id int64
		_, err := pgx.ForEachRow(rows, []any{&id}, func() error {
			ids[id] = true
			return nil
		})
		return err
	}
}

// Claim creates the runs of slots in one fenced batch; ahead leaves them not
// started (attempt 0, no start time).
func (p *Backend) Claim(ctx context.Context, token int64, node string, now time.Time, slots []scheduler.SlotKey, ahead bool) ([]scheduler.Result, error) {
	jobs, ats, manual := slotArrays(slots)
	if ahead {
		return p.slotWrite(ctx, token, jobs, ats, manual, p.q.claimAhead, jobs, ats, manual, token, node)
	}
	return p.slotWrite(ctx, token, jobs, ats, manual, p.q.claim, jobs, ats, manual, token, node, now)
}

// Start marks the not-started runs among refs as started at now and
// returns how many it marked.
func (p *Backend) Start(ctx context.Context, token int64, now time.Time, refs []scheduler.RunRef) (int, error) {
	ids := make([]int64, len(refs))
	jobs := make([]string, len(refs))
	for i, r := range refs {
		ids[i], jobs[i] = r.RunID, r.Job
	}
	marked := map[int64]bool{}
	err := p.fencedBatch(ctx, jobs, token, func(b *pgx.Batch) {
		b.Queue(p.q.start, ids, jobs, now, token).Query(collectIDs(marked))
	})
	return len(marked), err
}

// Record stores slots that ended without running, with their reasons.
func (p *Backend) Record(ctx context.Context, token int64, node string, now time.Time, outs []scheduler.Outcome) ([]scheduler.Result, error) {
	slices.SortFunc(outs, func(a, b scheduler.Outcome) int { return strings.Compare(a.Slot.Job, b.Slot.Job) })
	var (
		jobs, statuses, reasons []string
		ats                     []time.Time
		manual                  []bool
	)
	for _, o := range outs {
		jobs = append(jobs, o.Slot.Job)
		ats = append(ats, o.Slot.At)
		manual = append(manual, o.Slot.Manual)
		statuses = append(statuses, string(o.Status))
		reasons = append(reasons, o.Reason)
	}
	if slices.ContainsFunc(outs, func(o scheduler.Outcome) bool { return o.Notice != nil }) {
		return p.recordNotified(ctx, token, now, jobs, ats, manual, outs, jobs, ats, manual, statuses, reasons, token, node, now)
	}
	return p.slotWrite(ctx, token, jobs, ats, manual, p.q.record, jobs, ats, manual, statuses, reasons, token, node, now)
}

// Reclaim takes over the orphans among slots and returns the runs of the
// slots that have one, each with whether it took it over.
func (p *Backend) Reclaim(ctx context.Context, token int64, node string, now time.Time, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	jobs, ats, manual := slotArrays(slots)
	return p.slotWrite(ctx, token, jobs, ats, manual, p.q.reclaim, jobs, ats, manual, token, node, now)
}

// slotWrite runs write, a statement over the slots (jobs, ats, manual) that
// returns the tables.KeyCols of the rows it wrote, in one fenced batch, followed by
// a read of the slots' other rows: found by the write in its way, or
// committed by a concurrent writer while the write waited for it.
func (p *Backend) slotWrite(ctx context.Context, token int64, jobs []string, ats []time.Time, manual []bool, write string, args ...any) ([]scheduler.Result, error) {
	return p.slotWriteThen(ctx, token, jobs, ats, manual, nil, write, args...)
}

// slotWriteThen is slotWrite whose batch ends with what then queues, when
// then is not nil, so that it commits or fails with the write.
func (p *Backend) slotWriteThen(ctx context.Context, token int64, jobs []string, ats []time.Time, manual []bool,
	then func(*pgx.Batch), write string, args ...any) ([]scheduler.Result, error) {
	written := make([]scheduler.Run, 0, len(jobs))
	var found []scheduler.Run
	err := p.fencedBatch(ctx, jobs, token, func(b *pgx.Batch) {
		b.Queue(write, args...).Query(collectRuns(&written, pgKeyRun))
		b.Queue(p.q.slotRows, jobs, ats, manual).Query(collectRuns(&found, pgKeyRun))
		if then != nil {
			then(b)
		}
	})
	if err != nil {
		return nil, err
	}
	res := make([]scheduler.Result, 0, len(written)+len(found))
	for _, r := range written {
		res = append(res, scheduler.Result{Run: r, Written: true})
	}
	for _, r := range found {
		res = append(res, scheduler.Result{Run: r})
	}
	return res, nil
}

// results pairs runs with whether this call wrote them.
func results(runs []scheduler.Run, written map[int64]bool) []scheduler.Result {
	res := make([]scheduler.Result, len(runs))
	for i, r := range runs {
		res[i] = scheduler.Result{Run: r, Written: written[r.RunID]}
	}
	return res
}

// Complete finishes the running runs among cs and returns every run of cs
// that exists, each with whether it finished it.
func (p *Backend) Complete(ctx context.Context, token int64, now time.Time, cs []scheduler.Completion) ([]scheduler.Result, error) {
	var (
		runIDs                                 []int64
		jobs, statuses, errs, outputs, reasons []string
		attempts                               []int32
	)
	for _, c := range cs {
		runIDs = append(runIDs, c.RunID)
		jobs = append(jobs, c.Job)
		statuses = append(statuses, string(c.Status))
		errs = append(errs, c.Error)
		outputs = append(outputs, c.Output)
		reasons = append(reasons, c.Reason)
		attempts = append(attempts, int32(c.Attempt))
	}
	ids := make(map[int64]bool, len(cs))
	var runs []scheduler.Run
	queue := func(b *pgx.Batch) {
		b.Queue(p.q.complete, runIDs, jobs, statuses, errs, outputs, reasons, now, attempts).Query(collectIDs(ids))
		b.Queue(p.q.runRows, runIDs).Query(collectRuns(&runs, pgRun))
	}
	var err error
	if slices.ContainsFunc(cs, func(c scheduler.Completion) bool { return c.Notice != nil }) {
		err = p.completeNotified(ctx, token, now, cs, queue)
	} else {
		err = p.fencedBatch(ctx, jobs, token, queue)
	}
	if err != nil {
		return nil, err
	}
	return results(runs, ids), nil
}

// NextAttempt increases the attempt of a run running under token.
func (p *Backend) NextAttempt(ctx context.Context, token int64, job string, runID int64) (int, error) {
	attempt := 0
	err := p.fencedBatch(ctx, []string{job}, token, func(b *pgx.Batch) {
		b.Queue(p.q.nextAttempt, runID, job, token).Query(func(rows pgx.Rows) error {
			_, err := pgx.ForEachRow(rows, []any{&attempt}, func() error { return nil })
			return err
		})
	})
	if err == nil && attempt == 0 {
		err = fmt.Errorf("run %d is not running under token %d: %w", runID, token, verdict.ErrNotRunning)
	}
	return attempt, err
}

// queryRuns reads the runs a query returns with scan.
func (p *Backend) queryRuns(ctx context.Context, scan pgx.RowToFunc[scheduler.Run], sql string, args ...any) ([]scheduler.Run, error) {
	rows, err := p.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scan)
}

// Window returns the keys of the scheduled runs of jobs with slots in [from, to].
func (p *Backend) Window(ctx context.Context, jobs []string, from, to time.Time) ([]scheduler.Run, error) {
	return p.queryRuns(ctx, pgKeyRun, p.q.window, jobs, from, to)
}

// History returns job's newest limit runs, newest slot first.
func (p *Backend) History(ctx context.Context, job string, limit int) ([]scheduler.Run, error) {
	return p.queryRuns(ctx, pgRun, p.q.history, job, limit)
}

// Last returns the newest run of each job of jobs, or of every job when empty.
func (p *Backend) Last(ctx context.Context, jobs []string) ([]scheduler.Run, error) {
	if len(jobs) == 0 {
		return p.queryRuns(ctx, pgRun, p.q.lastAll)
	}
	return p.queryRuns(ctx, pgRun, p.q.lastOf, tables.Distinct(jobs))
}

// LastScheduled returns the newest run of a scheduled slot (not manual) of
// each job of jobs.
func (p *Backend) LastScheduled(ctx context.Context, jobs []string) ([]scheduler.Run, error) {
	return p.queryRuns(ctx, pgRun, p.q.lastScheduled, tables.Distinct(jobs))
}

// Orphans returns the runs left running under a token other than their
// job's fence, of jobs or of every job when empty, oldest slot first.
func (p *Backend) Orphans(ctx context.Context, jobs []string) ([]scheduler.Run, error) {
	if len(jobs) == 0 {
		return p.queryRuns(ctx, pgRun, p.q.orphansAll)
	}
	return p.queryRuns(ctx, pgRun, p.q.orphansOf, tables.Distinct(jobs))
}

// pgRun and pgKeyRun are tables.ScanRun for pgx.CollectRows.
func pgRun(row pgx.CollectableRow) (scheduler.Run, error)    { return tables.ScanRun(row, true) }
func pgKeyRun(row pgx.CollectableRow) (scheduler.Run, error) { return tables.ScanRun(row, false) }
