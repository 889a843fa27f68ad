package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"scheduler"
)

// The notices of outcomes, queued by the statement that follows the write of
// the outcomes in its batch. It joins the runs that this transaction wrote
// (their row version carries its xid), so a run the write found finished
// queues nothing, and counts each run's streak of failures in slot order, up
// to After+1 runs back, on the slot key index.
const noticeInsert = `INSERT INTO {s}outbox AS o (key, job, scheduled_at, manual, token, kind,
		destination, subject, body, next_attempt_at, created_at, updated_at)
	SELECT n.key, r.job, r.scheduled_at, r.manual, $8, n.kind, n.destination, n.subject, n.body, $9, $9, $9
	FROM unnest($1::text[], $2::timestamptz[], $3::boolean[], $4::text[], $5::text[], $6::text[], $7::text[], $10::text[], $11::integer[])
		AS n(job, at, manual, key, kind, destination, subject, body, after)
	JOIN {s}runs AS r ON r.job = n.job AND r.scheduled_at = n.at AND r.manual = n.manual
		AND r.xmin = pg_current_xact_id()::xid AND r.status <> 'running'
	WHERE n.after = 0 OR n.after = (
		SELECT coalesce(min(k.i) FILTER (WHERE k.status = 'succeeded'), count(*) + 1) - 1
		FROM unnest(ARRAY(
			SELECT h.status FROM {s}runs AS h
			WHERE h.job = r.job AND (h.scheduled_at, h.manual) <= (r.scheduled_at, r.manual)
				AND h.status IN ('succeeded', 'failed', 'fenced', 'missed')
			ORDER BY h.scheduled_at DESC, h.manual DESC LIMIT n.after + 1)) WITH ORDINALITY AS k(status, i))
	ORDER BY n.key
	ON CONFLICT ON CONSTRAINT outbox_key DO NOTHING`

// notices are the arrays of noticeInsert, one element per message.
type notices struct {
	jobs, keys, kinds, dests, subjects, bodies []string
	ats                                        []time.Time
	manual                                     []bool
	after                                      []int32
}

// add appends the messages of n, the notice of slot.
func (ns *notices) add(slot scheduler.SlotKey, n *scheduler.Notice) {
	if n == nil {
		return
	}
	for _, m := range n.Messages {
		ns.jobs = append(ns.jobs, slot.Job)
		ns.ats = append(ns.ats, slot.At)
		ns.manual = append(ns.manual, slot.Manual)
		ns.keys = append(ns.keys, m.Key)
		ns.kinds = append(ns.kinds, string(m.Kind))
		ns.dests = append(ns.dests, m.Destination)
		ns.subjects = append(ns.subjects, m.Subject)
		ns.bodies = append(ns.bodies, m.Body)
		ns.after = append(ns.after, int32(n.After))
	}
}

// queue adds noticeInsert to b when there is a message to queue.
func (ns *notices) queue(p *Backend, b *pgx.Batch, token int64, now time.Time) {
	if len(ns.keys) == 0 {
		return
	}
	b.Queue(p.outboxSQL(noticeInsert), ns.jobs, ns.ats, ns.manual, ns.keys, ns.kinds, ns.dests, ns.subjects,
		token, now, ns.bodies, ns.after)
}

// completeNoticeSlots reads the slots of the runs of completions with a
// notice, by run id (with each id's position in the list): noticeInsert joins
// by slot, which a completion does not carry. A run's slot never changes, so
// it is read before the fenced batch.
const completeNoticeSlots = `SELECT r.job, r.scheduled_at, r.manual, c.i FROM {s}runs AS r
	JOIN unnest($1::bigint[]) WITH ORDINALITY AS c(run_id, i) ON r.run_id = c.run_id`

// recordNotified is Record for outcomes of which some carry a notice: the
// write, the read of the rows it did not write, and the notices, in one
// fenced batch.
func (p *Backend) recordNotified(ctx context.Context, token int64, now time.Time, jobs []string, ats []time.Time, manual []bool,
	outs []scheduler.Outcome, args ...any) ([]scheduler.Result, error) {
	var ns notices
	for _, o := range outs {
		ns.add(o.Slot, o.Notice)
	}
	return p.slotWriteThen(ctx, token, jobs, ats, manual, func(b *pgx.Batch) { ns.queue(p, b, token, now) }, p.q.record, args...)
}

// completeNotified is Complete for completions of which some carry a notice:
// the slots of their runs are read first, then the completions, the rows and
// the notices are written in one fenced batch. A run that is not found has
// no notice to queue.
func (p *Backend) completeNotified(ctx context.Context, token int64, now time.Time, cs []scheduler.Completion, queue func(b *pgx.Batch)) error {
	var ids []int64
	var idx []int
	for i, c := range cs {
		if c.Notice != nil {
			ids = append(ids, c.RunID)
			idx = append(idx, i)
		}
	}
	var ns notices
	rows, err := p.pool.Query(ctx, p.outboxSQL(completeNoticeSlots), ids)
	if err != nil {
		return err
	}
	var (
		sl scheduler.SlotKey
		i  int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&sl.Job, &sl.At, &sl.Manual, &i}, func() error {
		if c := cs[idx[i-1]]; c.Job == sl.Job {
			ns.add(scheduler.SlotKey{Job: sl.Job, At: sl.At.UTC(), Manual: sl.Manual}, c.Notice)
		}
		return nil
	}); err != nil {
		return err
	}
	jobs := make([]string, len(cs))
	for k, c := range cs {
		jobs[k] = c.Job
	}
	return p.fencedBatch(ctx, jobs, token, func(b *pgx.Batch) {
		queue(b)
		ns.queue(p, b, token, now)
	})
}

// deadNoticeInsert queues a message of the notice of the dead message $1, on
// its slot, when the batch's record made it dead under the claim of token $2.
const deadNoticeInsert = `INSERT INTO {s}outbox (key, job, scheduled_at, manual, token, kind, destination,
		subject, body, next_attempt_at, created_at, updated_at)
	SELECT $3::text, d.job, d.scheduled_at, d.manual, $2::bigint, $4::text, $5::text, $6::text, $7::text,
		$8::timestamptz, $8::timestamptz, $8::timestamptz
	FROM {s}outbox AS d WHERE d.key = $1 AND d.status = 'dead' AND d.claim_token = $2
	ON CONFLICT ON CONSTRAINT outbox_key DO NOTHING`

// queueDeadNotice adds the messages of n, the notice of the dead message key,
// to b.
func (p *Backend) queueDeadNotice(b *pgx.Batch, token int64, key string, at time.Time, n *scheduler.Notice) {
	if n == nil {
		return
	}
	for _, m := range n.Messages {
		b.Queue(p.outboxSQL(deadNoticeInsert), key, token, m.Key, string(m.Kind), m.Destination, m.Subject, m.Body, at)
	}
}
