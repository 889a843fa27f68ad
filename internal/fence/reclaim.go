package fence

import (
	"context"
	"fmt"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// maxReclaimBatch is the most slots one ReclaimMany transaction takes over:
// a fenced batch holds an advisory lock per job until it commits, and the
// server's lock table is shared and bounded.
const maxReclaimBatch = 1000

// Reclaim takes over an orphan: a run of slot left running under an older
// token, whose leader can no longer write (its term is fenced out). The run
// continues under token and node with its attempt increased by one and a
// new start time: now, or the slot's time if that is later. A slot whose
// run is finished, or running under token itself (or a newer one), fails
// with ErrNotOrphaned; a slot without a run fails with ErrNotRunning.
func (s *Store) Reclaim(ctx context.Context, token int64, node string, slot scheduler.SlotKey) (scheduler.Run, error) {
	if err := checkSlots(token, node, []scheduler.SlotKey{slot}); err != nil {
		return scheduler.Run{}, fmt.Errorf("reclaim: %w", err)
	}
	slot.At = tables.NormTime(slot.At)
	res, err := retried(ctx, s, slot.Job, token, func() ([]scheduler.Result, error) {
		return s.b.Reclaim(ctx, token, node, s.now(), []scheduler.SlotKey{slot})
	})
	switch {
	case err != nil:
		return scheduler.Run{}, fmt.Errorf("reclaim slot %s of job %q with token %d: %w", slot.At.Format(timeLayout), slot.Job, token, err)
	case len(res) == 0:
		return scheduler.Run{}, fmt.Errorf("reclaim slot %s of job %q: no run: %w", slot.At.Format(timeLayout), slot.Job, ErrNotRunning)
	case !res[0].Written:
		run := res[0].Run
		return run, fmt.Errorf("reclaim slot %s of job %q: run %d is %s with token %d: %w",
			slot.At.Format(timeLayout), slot.Job, run.RunID, run.Status, run.Token, ErrNotOrphaned)
	}
	return res[0].Run, nil
}

// ReclaimMany takes over many orphans, like Reclaim, in fenced
// transactions of one round trip and a bounded number of slots each,
// entering the fence of every job involved. Each result says whether the slot's run was taken
// over (Written) and holds the run as this call left it: taken over, or as
// found (not running, or already running under token); a slot without a
// run has a zero Run. The order follows slots; duplicates are taken over
// once. A stale token fails the call with a stale error; the batches before
// it stay committed, and their runs are orphans again for the next leader.
func (s *Store) ReclaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	if err := checkSlots(token, node, slots); err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	if len(slots) == 0 {
		return nil, nil
	}
	all := withNormTimes(slots)
	uniq := normSlots(all)
	res := make([]scheduler.Result, 0, len(uniq))
	err := inBatches(uniq, maxReclaimBatch, func(part []scheduler.SlotKey) error {
		got, err := retried(ctx, s, part[0].Job, token, func() ([]scheduler.Result, error) {
			return s.b.Reclaim(ctx, token, node, s.now(), part)
		})
		if err != nil {
			return fmt.Errorf("reclaim %d slots with token %d: %w", len(part), token, err)
		}
		res = append(res, got...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return expand(all, res), nil
}
