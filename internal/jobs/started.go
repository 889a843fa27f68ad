package jobs

import (
	"context"

	"go.uber.org/zap"
)

// AheadClaimer is an optional extension of a Ledger: claims made ahead of their slots leave
// the runs not started, so that the attempt count counts only attempts that started. A slot
// claimed ahead by a leader that stopped before the slot fired is then run by the next leader
// as attempt 1, not 2. Without it, a claim ahead is counted as the run's first attempt.
type AheadClaimer interface {
	// ClaimAhead claims slots like ClaimMany, leaving their runs not started: attempt 0, until
	// MarkStarted. Taking over such a run makes it attempt 1.
	ClaimAhead(ctx context.Context, token int64, node string, slots []SlotKey) ([]Claimed, error)
	// MarkStarted records that runs claimed ahead started (attempt 1); runs that started
	// already, or are finished, are left as they are.
	MarkStarted(ctx context.Context, token int64, runs []LedgerRun) error
}

// claimSlotsAhead claims slots ahead of their fire time: not started, when the ledger can.
func (t *term) claimSlotsAhead(ctx context.Context, slots []SlotKey) ([]Claimed, error) {
	if ac, ok := t.r.opts.Ledger.(AheadClaimer); ok {
		return ac.ClaimAhead(ctx, t.token, t.r.opts.Node, slots)
	}
	return t.r.opts.Ledger.ClaimMany(ctx, t.token, t.r.opts.Node, slots)
}

// markStarted records, off the loop and off the runs' start path, that the runs just launched
// that were claimed ahead (attempt 0) have started. If the write does not land and the term
// ends with such a run cut off, the next leader numbers its retry as attempt 1 again: the
// count then misses that attempt, which the log shows.
func (t *term) markStarted(launched []LedgerRun) {
	ac, ok := t.r.opts.Ledger.(AheadClaimer)
	if !ok || t.ended {
		return
	}
	var runs []LedgerRun
	for _, r := range launched {
		if r.Attempt == 0 {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return
	}
	t.marks.Go(func() {
		ctx, cancel := t.writeCtx(t.runsCtx)
		defer cancel()
		if err := ac.MarkStarted(ctx, t.token, runs); err != nil {
			t.lg.Warn("record runs started", zap.Int("runs", len(runs)), zap.String("job", runs[0].Slot.Job),
				zap.Int64("run_id", runs[0].RunID), zap.Error(err))
		}
	})
}
