package fire

import (
	"context"
	"errors"

	"scheduler"
	"scheduler/internal/fence"
)

// unbatched makes the batch methods of a Ledger one call per item (CompleteMany one Complete per
// run, ReclaimMany one Reclaim per orphan), so that the runner completes and takes over runs one
// round trip at a time, as the design before claiming ahead did.
type unbatched struct{ scheduler.Ledger }

func (l unbatched) ReclaimMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
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

func (l unbatched) CompleteMany(ctx context.Context, token int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
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
