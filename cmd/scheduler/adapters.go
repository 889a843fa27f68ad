package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"scheduler/internal/fence"
	"scheduler/internal/jobs"
)

// The store is the runner's ledger and the jobs' fencer; these adapters translate between the
// two packages, which do not import each other.
var (
	_ jobs.Ledger = ledger{}
	_ jobs.Fencer = fencer{}
)

// fencedErr marks a stale-token refusal of the store as jobs.ErrFenced, keeping the store's
// error (and its message: job, token, fence) in the chain.
func fencedErr(err error) error {
	if errors.Is(err, fence.ErrStale) {
		return fmt.Errorf("%w: %w", jobs.ErrFenced, err)
	}
	return err
}

// fencer runs a job's writes in fenced transactions of the store.
type fencer struct{ s *fence.Store }

func (f fencer) Fenced(ctx context.Context, job string, token int64, fn func(ctx context.Context, tx jobs.Tx) error) error {
	return fencedErr(f.s.Fenced(ctx, job, token, func(tx fence.Tx) error { return fn(ctx, jobTx{tx}) }))
}

// jobTx narrows a store transaction to what jobs use.
type jobTx struct{ tx fence.Tx }

func (t jobTx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return t.tx.Exec(ctx, sql, args...)
}

func (t jobTx) QueryRow(ctx context.Context, sql string, args ...any) jobs.Row {
	return t.tx.QueryRow(ctx, sql, args...)
}

// ledger is the store's run ledger as the runner sees it.
type ledger struct{ s *fence.Store }

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

func (l ledger) RaiseAll(ctx context.Context, names []string, token int64) error {
	return fencedErr(l.s.RaiseAll(ctx, names, token))
}

func (l ledger) ClaimMany(ctx context.Context, token int64, node string, slots []jobs.SlotKey) ([]jobs.Claimed, error) {
	in := make([]fence.Slot, len(slots))
	for i, s := range slots {
		in[i] = toSlot(s)
	}
	res, err := l.s.ClaimMany(ctx, token, node, in)
	if err != nil {
		return nil, fencedErr(err)
	}
	out := make([]jobs.Claimed, len(res))
	for i, r := range res {
		out[i] = jobs.Claimed{Run: toRun(r.Run), Written: r.Written}
	}
	return out, nil
}

func (l ledger) Reclaim(ctx context.Context, token int64, node string, slot jobs.SlotKey) (jobs.LedgerRun, error) {
	r, err := l.s.Reclaim(ctx, token, node, toSlot(slot))
	return toRun(r), fencedErr(err)
}

func (l ledger) RecordMany(ctx context.Context, token int64, node string, outs []jobs.Outcome) error {
	in := make([]fence.Outcome, len(outs))
	for i, o := range outs {
		in[i] = fence.Outcome{Slot: toSlot(o.Slot), Status: fence.Status(o.Status), Reason: o.Reason}
	}
	_, err := l.s.RecordMany(ctx, token, node, in)
	return fencedErr(err)
}

func (l ledger) Complete(ctx context.Context, token int64, c jobs.Completion) error {
	_, err := l.s.Complete(ctx, token, fence.Completion{
		RunID: c.RunID, Job: c.Job, Status: fence.Status(c.Status), Error: c.Error, Output: c.Output, Reason: c.Reason,
		Attempt: c.Attempt,
	})
	return fencedErr(err)
}

func (l ledger) NextAttempt(ctx context.Context, token int64, job string, runID int64) (int, error) {
	n, err := l.s.NextAttempt(ctx, token, job, runID)
	return n, fencedErr(err)
}

func (l ledger) Window(ctx context.Context, names []string, from, to time.Time) ([]jobs.LedgerRun, error) {
	var out []jobs.LedgerRun
	for _, name := range names {
		runs, err := l.s.Window(ctx, name, from, to)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			out = append(out, toRun(r))
		}
	}
	return out, nil
}

func (l ledger) Last(ctx context.Context, names []string) (map[string]jobs.LedgerRun, error) {
	last, err := l.s.Last(ctx, names...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]jobs.LedgerRun, len(last))
	for k, r := range last {
		out[k] = toRun(r)
	}
	return out, nil
}

func (l ledger) Orphans(ctx context.Context, names []string) ([]jobs.LedgerRun, error) {
	runs, err := l.s.Orphans(ctx, names...)
	if err != nil {
		return nil, err
	}
	out := make([]jobs.LedgerRun, len(runs))
	for i, r := range runs {
		out[i] = toRun(r)
	}
	return out, nil
}
