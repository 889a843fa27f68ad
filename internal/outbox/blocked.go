package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"scheduler"
)

// A refusal of the outbox's fence is not always a newer leader, as for a job's fence: when the
// election still confirms the term, no newer term of that election raised it. Either the
// election's tokens went backwards (etcd restored without --bump-revision), or another
// deployment with an election of its own (its own embedded etcd, another election.prefix or
// backend) shares the store, or something outside the scheduler raised it. Ending the term then
// only makes the replica win again at once, with a token that fences the other deployment out,
// which does the same in turn: terms churn and interrupted slots run again. So the outbox is
// held back instead, its fence raised again every BlockedRetry, and the term goes on.

// fenceName is the name under which the store keeps the outbox's fence, as a job's.
const fenceName = "@outbox"

// BlockedRetry is how often a blocked outbox claims again; the claim raises its fence.
const BlockedRetry = 30 * time.Second

// RunConfirmed is Run, except when the store refuses token while confirm(ctx, token) returns nil
// (the election still holds that term): then the outbox is blocked (Blocked says why, the
// messages stay queued) and Run is tried again every BlockedRetry until ctx ends, which returns
// nil. Otherwise it returns what Run returns.
func (d *Dispatcher) RunConfirmed(ctx context.Context, token int64, confirm func(context.Context, int64) error) error {
	defer d.blocked.Store(nil)
	// The outcomes the fence refused are kept across the runs, to be recorded once it is reset.
	left := newUnrecorded()
	for again := false; ; again = true {
		err := d.run(ctx, token, left, again)
		if !errors.Is(err, ErrFenced) || ctx.Err() != nil {
			return err
		}
		if cerr := confirm(ctx, token); cerr != nil {
			d.lg.Warn("outbox fence refused and the term not confirmed; the term ends", zap.Int64("token", token),
				zap.NamedError("refusal", err), zap.Error(cerr))
			return err
		}
		var fe *scheduler.FenceError
		fence := int64(0)
		if errors.As(err, &fe) {
			fence = fe.Fence
		}
		reason := BlockReason(token, fence)
		if d.blocked.Swap(&reason) == nil {
			d.lg.Error("outbox blocked", zap.Int64("token", token), zap.Int64("fence", fence), zap.String("reason", reason))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.cfg.After(BlockedRetry):
		}
	}
}

// Blocked returns why the outbox is blocked in the current term, or "" when it is not.
func (d *Dispatcher) Blocked() string {
	if r := d.blocked.Load(); r != nil {
		return *r
	}
	return ""
}

// unblocked clears the blocked state once a claim with token succeeded.
func (d *Dispatcher) unblocked(lg *zap.Logger) {
	if d.blocked.Swap(nil) != nil {
		lg.Info("outbox unblocked")
	}
}

// BlockReason says why the outbox is blocked and what to do, for logs, status pages and /readyz.
func BlockReason(token, fence int64) string {
	above := "above"
	if fence > 0 {
		above = fmt.Sprintf("at %d, above", fence)
	}
	return fmt.Sprintf("the outbox is blocked: its fence (job %q) is %s the leader's token %d, and the election "+
		"confirms that term, so no newer leader of this election raised it. Either another deployment with "+
		"an election of its own shares this store and schema (each replica with its own embedded etcd, "+
		"another election.prefix, backend or etcd cluster): give every replica of the store the same "+
		"election, then stop the other; or etcd's revisions went backwards (restored from a snapshot without "+
		"--bump-revision): restore it again with --bump-revision past the highest fence; or something outside "+
		"the scheduler raised it. Then reset the fence as the table owner (SELECT fence_admin_reset('%s') "+
		"in the scheduler's schema on Postgres). Messages stay queued; the outbox delivers again by itself "+
		"once its fence is reset", fenceName, above, token, fenceName)
}
