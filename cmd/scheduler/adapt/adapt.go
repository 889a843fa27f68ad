// Package adapt connects the store to the runner: the run ledger and the jobs' fenced
// transactions of package fence, translated to the interfaces package jobs declares. The two
// packages do not import each other; the daemon wires them through these adapters, and the
// benchmarks use the same ones, so that they measure what the daemon runs.
package adapt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"scheduler/internal/fence"
	"scheduler/internal/jobs"
)

var (
	_ jobs.Ledger          = Ledger{}
	_ jobs.BatchCompleter  = Ledger{}
	_ jobs.BatchReclaimer  = Ledger{}
	_ jobs.Fencer          = Fencer{}
	_ jobs.StatementRunner = Statements{}
)

// fencedErr marks a refusal of the store (a stale token, or a raise below a stored fence) as a
// *jobs.FenceError naming the job and its fence, keeping the store's error (and its message) in
// the chain.
func fencedErr(err error) error {
	var (
		stale *fence.StaleError
		reg   *fence.RegressionError
	)
	switch {
	case errors.As(err, &stale):
		return &jobs.FenceError{Job: stale.Job, Token: stale.Token, Fence: stale.Fence, Err: fmt.Errorf("%w: %w", jobs.ErrFenced, err)}
	case errors.As(err, &reg):
		return &jobs.FenceError{Job: reg.Job, Token: reg.Token, Fence: reg.Fence, Err: fmt.Errorf("%w: %w", jobs.ErrFenced, err)}
	case errors.Is(err, fence.ErrStale):
		return fmt.Errorf("%w: %w", jobs.ErrFenced, err)
	case errors.Is(err, fence.ErrRaiseTimeout):
		return fmt.Errorf("%w: %w", jobs.ErrFenceHeld, err)
	}
	return err
}

// Fencer runs a job's writes in fenced transactions of the store.
type Fencer struct{ Store *fence.Store }

// Fenced runs fn in one transaction of the store fenced with token for job.
func (f Fencer) Fenced(ctx context.Context, job string, token int64, fn func(ctx context.Context, tx jobs.Tx) error) error {
	return fencedErr(f.Store.Fenced(ctx, job, token, func(tx fence.Tx) error { return fn(ctx, jobTx{tx}) }))
}

// Statements runs sql jobs' texts in fenced transactions of the store.
type Statements struct{ Store *fence.Store }

// FencedStatements runs statements in one transaction of the store fenced with token for job,
// under role when it is set.
func (s Statements) FencedStatements(ctx context.Context, job string, token int64, role, statements string) (int64, error) {
	n, err := s.Store.FencedStatements(ctx, job, token, fence.Statements{Text: statements, Role: role})
	return n, fencedErr(err)
}

// jobTx narrows a store transaction to what jobs use.
type jobTx struct{ tx fence.Tx }

func (t jobTx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return t.tx.Exec(ctx, sql, args...)
}

func (t jobTx) QueryRow(ctx context.Context, sql string, args ...any) jobs.Row {
	return t.tx.QueryRow(ctx, sql, args...)
}

// Ledger is the store's run ledger as the runner sees it, with the batch operations: many runs
// completed or taken over, and a window of many jobs read, in one round trip each.
type Ledger struct{ Store *fence.Store }

func toSlot(k jobs.SlotKey) fence.Slot { return fence.Slot{Job: k.Job, At: k.At, Manual: k.Manual} }

func toSlots(ks []jobs.SlotKey) []fence.Slot {
	out := make([]fence.Slot, len(ks))
	for i, k := range ks {
		out[i] = toSlot(k)
	}
	return out
}

func toRun(r fence.Run) jobs.LedgerRun {
	return jobs.LedgerRun{
		RunID:   r.RunID,
		Slot:    jobs.SlotKey{Job: r.Job, At: r.ScheduledAt, Manual: r.Manual},
		Status:  jobs.Status(r.Status),
		Token:   r.Token,
		Attempt: r.Attempt,
	}
}

func toCompletion(c jobs.Completion) fence.Completion {
	return fence.Completion{
		RunID: c.RunID, Job: c.Job, Status: fence.Status(c.Status), Error: c.Error, Output: c.Output, Reason: c.Reason,
		Attempt: c.Attempt,
	}
}

// RaiseAll raises the fences of names to token.
func (l Ledger) RaiseAll(ctx context.Context, names []string, token int64) error {
	return fencedErr(l.Store.RaiseAll(ctx, names, token))
}

// ClaimMany claims slots in one fenced round trip.
func (l Ledger) ClaimMany(ctx context.Context, token int64, node string, slots []jobs.SlotKey) ([]jobs.Claimed, error) {
	res, err := l.Store.ClaimMany(ctx, token, node, toSlots(slots))
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
func (l Ledger) Reclaim(ctx context.Context, token int64, node string, slot jobs.SlotKey) (jobs.LedgerRun, error) {
	r, err := l.Store.Reclaim(ctx, token, node, toSlot(slot))
	return toRun(r), fencedErr(err)
}

// ReclaimMany takes over many orphaned runs in one fenced round trip per 1,000 slots.
func (l Ledger) ReclaimMany(ctx context.Context, token int64, node string, slots []jobs.SlotKey) ([]jobs.LedgerRun, []bool, error) {
	res, err := l.Store.ReclaimMany(ctx, token, node, toSlots(slots))
	if err != nil {
		return nil, nil, fencedErr(err)
	}
	runs := make([]jobs.LedgerRun, len(res))
	taken := make([]bool, len(res))
	for i, r := range res {
		runs[i], taken[i] = toRun(r.Run), r.Written
	}
	return runs, taken, nil
}

// RecordMany stores slots that end without running.
func (l Ledger) RecordMany(ctx context.Context, token int64, node string, outs []jobs.Outcome) error {
	in := make([]fence.Outcome, len(outs))
	for i, o := range outs {
		in[i] = fence.Outcome{Slot: toSlot(o.Slot), Status: fence.Status(o.Status), Reason: o.Reason}
	}
	_, err := l.Store.RecordMany(ctx, token, node, in)
	return fencedErr(err)
}

// Complete finishes a running run. A run the store no longer holds as running is reported as
// jobs.ErrNotRunning, so that the runner does not retry the write.
func (l Ledger) Complete(ctx context.Context, token int64, c jobs.Completion) error {
	_, err := l.Store.Complete(ctx, token, toCompletion(c))
	if errors.Is(err, fence.ErrNotRunning) {
		return fmt.Errorf("%w: %w", jobs.ErrNotRunning, err)
	}
	return fencedErr(err)
}

// CompleteMany finishes many runs in one fenced round trip.
func (l Ledger) CompleteMany(ctx context.Context, token int64, cs []jobs.Completion) ([]bool, error) {
	in := make([]fence.Completion, len(cs))
	for i, c := range cs {
		in[i] = toCompletion(c)
	}
	res, err := l.Store.CompleteMany(ctx, token, in)
	if err != nil {
		return nil, fencedErr(err)
	}
	done := make([]bool, len(res))
	for i, r := range res {
		done[i] = r.Written
	}
	return done, nil
}

// NextAttempt records a retry.
func (l Ledger) NextAttempt(ctx context.Context, token int64, job string, runID int64) (int, error) {
	n, err := l.Store.NextAttempt(ctx, token, job, runID)
	return n, fencedErr(err)
}

// Window returns the scheduled runs of names with slots in [from, to], in one query.
func (l Ledger) Window(ctx context.Context, names []string, from, to time.Time) ([]jobs.LedgerRun, error) {
	runs, err := l.Store.Window(ctx, names, from, to)
	if err != nil {
		return nil, err
	}
	return toRuns(runs), nil
}

// Last returns the newest run of each job that has one.
func (l Ledger) Last(ctx context.Context, names []string) (map[string]jobs.LedgerRun, error) {
	last, err := l.Store.Last(ctx, names...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]jobs.LedgerRun, len(last))
	for k, r := range last {
		out[k] = toRun(r)
	}
	return out, nil
}

// Orphans returns the runs of names left running under a token older than their fence.
func (l Ledger) Orphans(ctx context.Context, names []string) ([]jobs.LedgerRun, error) {
	runs, err := l.Store.Orphans(ctx, names...)
	if err != nil {
		return nil, err
	}
	return toRuns(runs), nil
}

func toRuns(runs []fence.Run) []jobs.LedgerRun {
	out := make([]jobs.LedgerRun, len(runs))
	for i, r := range runs {
		out[i] = toRun(r)
	}
	return out
}
