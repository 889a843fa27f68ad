package adapt

import (
	"context"

	"scheduler/internal/fence"
	"scheduler/internal/jobs"
)

var _ jobs.AheadClaimer = Ledger{}

// ClaimAhead claims slots ahead of their fire time, leaving their runs not started.
func (l Ledger) ClaimAhead(ctx context.Context, token int64, node string, slots []jobs.SlotKey) ([]jobs.Claimed, error) {
	res, err := l.Store.ClaimAheadMany(ctx, token, node, toSlots(slots))
	if err != nil {
		return nil, fencedErr(err)
	}
	out := make([]jobs.Claimed, len(res))
	for i, r := range res {
		out[i] = jobs.Claimed{Run: toRun(r.Run), Written: r.Written}
	}
	return out, nil
}

// MarkStarted records that runs claimed ahead started.
func (l Ledger) MarkStarted(ctx context.Context, token int64, runs []jobs.LedgerRun) error {
	refs := make([]fence.RunRef, len(runs))
	for i, r := range runs {
		refs[i] = fence.RunRef{RunID: r.RunID, Job: r.Slot.Job}
	}
	_, err := l.Store.StartMany(ctx, token, refs)
	return fencedErr(err)
}
