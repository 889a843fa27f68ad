package fence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// backfill is the backend half of backfilling: the claim of a past slot for
// a backfill request, and the runs a request made.
type backfill interface {
	// ClaimBackfill gives b's slot a running run marked with b.ID, fenced
	// with token: a new run, or the slot's finished run taken over (attempt
	// plus one, its outcome cleared) unless it is running, carries b.ID
	// already, or succeeded without b.Rerun. The result holds the slot's
	// run, every column, written or as found.
	ClaimBackfill(ctx context.Context, token int64, node string, now time.Time, b scheduler.BackfillSlot) (scheduler.Result, error)
	// BackfillRuns returns the runs of job marked with id, oldest slot first.
	BackfillRuns(ctx context.Context, job string, id int64) ([]scheduler.Run, error)
	// SlotRuns returns the scheduled runs of job with slots in [from, to],
	// oldest first, every column.
	SlotRuns(ctx context.Context, job string, from, to time.Time) ([]scheduler.Run, error)
	// Running returns the running runs of job, oldest slot first.
	Running(ctx context.Context, job string) ([]scheduler.Run, error)
}

// ClaimBackfill claims the slot b for the backfill request b.ID in one fenced
// transaction, so that it runs through the runner like a fired slot. The
// ledger keeps one run per slot, so:
//   - a slot without a run gets a new running run, attempt 1;
//   - a slot whose run finished (failed, skipped, missed, fenced; succeeded
//     only with b.Rerun) has that run taken over: running again under token,
//     its attempt one higher, its outcome cleared, marked with b.ID;
//   - a slot whose run is running, already carries b.ID, or succeeded
//     without b.Rerun is left as it is and returned with Written false.
//
// The run keeps its id, so a rerun is another attempt of the same run: an
// http job sees the same Idempotency-Key. A write refused by the fence fails
// with an error wrapping ErrFenced.
func (s *Store) ClaimBackfill(ctx context.Context, token int64, node string, b scheduler.BackfillSlot) (scheduler.Result, error) {
	if err := checkSlots(token, node, []scheduler.SlotKey{{Job: b.Job, At: b.At}}); err != nil {
		return scheduler.Result{}, fmt.Errorf("claim backfill: %w", err)
	}
	if b.ID <= 0 {
		return scheduler.Result{}, fmt.Errorf("claim backfill of job %q: request id %d: want > 0", b.Job, b.ID)
	}
	b.At = tables.NormTime(b.At)
	res, err := retried(ctx, s, b.Job, token, func() (scheduler.Result, error) {
		return s.b.ClaimBackfill(ctx, token, node, s.now(), b)
	})
	if err != nil {
		return scheduler.Result{}, fmt.Errorf("claim slot %s of job %q for backfill %d with token %d: %w",
			b.At.Format(timeLayout), b.Job, b.ID, token, err)
	}
	if res.Run.RunID == 0 {
		return scheduler.Result{}, fmt.Errorf("claim slot %s of job %q for backfill %d: %w",
			b.At.Format(timeLayout), b.Job, b.ID, errors.New("the store returned no run"))
	}
	return res, nil
}

// BackfillRuns returns the runs of job that the backfill request id made, or
// took over, oldest slot first, every column: what a leader reads to carry
// on with a request an earlier one began.
func (s *Store) BackfillRuns(ctx context.Context, job string, id int64) ([]scheduler.Run, error) {
	runs, err := s.b.BackfillRuns(ctx, job, id)
	if err != nil {
		return nil, fmt.Errorf("runs of job %q for backfill %d: %w", job, id, err)
	}
	return runs, nil
}

// SlotRuns returns the scheduled (not manual) runs of job with slots in
// [from, to], oldest first, every column: how a backfill follows its slots.
func (s *Store) SlotRuns(ctx context.Context, job string, from, to time.Time) ([]scheduler.Run, error) {
	runs, err := s.b.SlotRuns(ctx, job, tables.NormTime(from), tables.NormTime(to))
	if err != nil {
		return nil, fmt.Errorf("runs of job %q from %s to %s: %w", job, from.Format(timeLayout), to.Format(timeLayout), err)
	}
	return runs, nil
}

// Running returns the runs of job that are running (in this term or left by
// an older one), oldest slot first, every column.
func (s *Store) Running(ctx context.Context, job string) ([]scheduler.Run, error) {
	runs, err := s.b.Running(ctx, job)
	if err != nil {
		return nil, fmt.Errorf("running runs of job %q: %w", job, err)
	}
	return runs, nil
}

// hasBackfill reports whether any of slots is a backfill request's.
func hasBackfill(slots []scheduler.SlotKey) bool {
	return slices.ContainsFunc(slots, func(sl scheduler.SlotKey) bool { return sl.Backfill != 0 })
}

// claimWithBackfill is ClaimMany for slots among which some are backfill requests': those are
// claimed one by one with ClaimBackfill, the others together; the results follow slots.
func (s *Store) claimWithBackfill(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	out := make([]scheduler.Result, len(slots))
	var plain []scheduler.SlotKey
	var at []int
	for i, sl := range slots {
		if sl.Backfill == 0 || sl.Manual {
			sl.Backfill, sl.Rerun = 0, false
			plain, at = append(plain, sl), append(at, i)
			continue
		}
		res, err := s.ClaimBackfill(ctx, token, node, scheduler.BackfillSlot{Job: sl.Job, At: sl.At, ID: sl.Backfill, Rerun: sl.Rerun})
		if err != nil {
			return nil, err
		}
		out[i] = res
	}
	if len(plain) > 0 {
		res, err := s.ClaimMany(ctx, token, node, plain)
		if err != nil {
			return nil, err
		}
		for k, i := range at {
			out[i] = res[k]
		}
	}
	return out, nil
}
