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
	return oneByOne(slots, fence.ErrNotOrphaned, func(s scheduler.SlotKey) (scheduler.Run, error) {
		return l.Ledger.Reclaim(ctx, token, node, s)
	})
}

// CompleteMany is Complete for each completion; a run no longer running is not written.
func (l Unbatched) CompleteMany(ctx context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
	return oneByOne(cs, scheduler.ErrNotRunning, func(c scheduler.Completion) (scheduler.Run, error) {
		return l.Ledger.Complete(ctx, token, c)
	})
}

// oneByOne calls write for each item: Result i is Written with the run write returned, or not
// written when write failed with passed; any other error ends the call.
func oneByOne[T any](items []T, passed error, write func(T) (scheduler.Run, error)) ([]scheduler.Result, error) {
	out := make([]scheduler.Result, len(items))
	for i, it := range items {
		r, err := write(it)
		switch {
		case errors.Is(err, passed):
		case err != nil:
			return nil, err
		default:
			out[i] = scheduler.Result{Run: r, Written: true}
		}
	}
	return out, nil
}
