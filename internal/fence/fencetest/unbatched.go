package fencetest

import (
	"context"
	"errors"

	"scheduler"
	"scheduler/internal/fence"
)

// Unbatched makes the batch methods of a Ledger one call per item (ReclaimMany one Reclaim per
// orphan, CompleteMany one Complete per run), so that a runner over it completes and takes over
// runs one round trip at a time, as the design before the batch operations did.
type Unbatched struct{ scheduler.Ledger }

// ReclaimMany is Reclaim for each slot; a slot whose run is not an orphan is not taken.
func (l Unbatched) ReclaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	out := make([]scheduler.Result, len(slots))
	for i, s := range slots {
		r, err := l.Ledger.Reclaim(ctx, token, node, s)
		switch {
		case errors.Is(err, fence.ErrNotOrphaned):
		case err != nil:
			return nil, err
		default:
			out[i] = scheduler.Result{Run: r, Written: true}
		}
	}
	return out, nil
}

// CompleteMany is Complete for each completion; a run no longer running is not written.
func (l Unbatched) CompleteMany(ctx context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
	out := make([]scheduler.Result, len(cs))
	for i, c := range cs {
		r, err := l.Ledger.Complete(ctx, token, c)
		switch {
		case errors.Is(err, scheduler.ErrNotRunning):
		case err != nil:
			return nil, err
		default:
			out[i] = scheduler.Result{Run: r, Written: true}
		}
	}
	return out, nil
}
