package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"scheduler"

	"scheduler/internal/jobs/internal/clock"
	"scheduler/internal/jobs/internal/holds"
	"scheduler/internal/jobs/internal/parallel"
	"scheduler/internal/jobs/internal/refusal"
	"scheduler/internal/jobs/internal/runkey"
)

// takeOver raises every job's fence, then catches up on missed slots and seeds the timers.
func (t *tenure) takeOver(ctx context.Context, specs []*Spec) error {
	ahead, err := t.storeAhead(ctx)
	if err != nil {
		return err
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
		t.addJob(s)
	}
	if err = t.raiseUnblocked(ctx, names); err != nil {
		return fmt.Errorf("raise the fences of %d jobs to token %d: %w", len(names), t.token, err)
	}
	for _, js := range t.blocked {
		// A job blocked at takeover missed its catch-up: once its fence is free (a held one is
		// usually an earlier leader's last write; a raised one is reset by an operator), it is
		// taken over like the others.
		js.blk.catchUp = true
	}
	now := t.r.clock.Now().Add(-ahead) // no slot still to come by the store's clock is due
	if err := t.catchUp(ctx, specs, now); err != nil {
		return err
	}
	for _, s := range specs {
		t.schedule(t.jobs[s.Name], now)
	}
	t.lg.Info("leading", zap.Int("jobs", len(specs)))
	return nil
}

// storeAhead is how far this node's clock runs ahead of the store's (clock.Ahead), or the error
// that ends the term when that is more than clock.MaxAhead.
func (t *tenure) storeAhead(ctx context.Context) (time.Duration, error) {
	s, _ := t.r.opts.Ledger.(clock.Store)
	ahead, err := clock.Ahead(ctx, t.r.clock, s)
	if err != nil {
		t.lg.Warn("read the store's clock; deciding by this node's", zap.Error(err))
	} else if ahead > clock.MaxAhead {
		t.lg.Error("clock ahead of the store's; not leading", zap.Duration("ahead", ahead))
		return 0, clock.ErrAhead(ahead)
	}
	return ahead, nil
}

// raiseUnblocked raises the fences of names; a job whose fence is above the token is blocked
// (when etcd confirms the term) and the others are raised again without it.
func (t *tenure) raiseUnblocked(ctx context.Context, names []string) error {
	return t.settleRaise(ctx, names, t.raiseAll(ctx, names))
}

// settleRaise answers a raise of names that returned err: a refused job is blocked and the
// others raised again; after a raise that gave up waiting, the jobs whose fences are held are
// found (package holds), held back (blocked) and raised again later while the others run: one
// open transaction on one job's fence, such as a job role's fence_verify, must not stop all.
func (t *tenure) settleRaise(ctx context.Context, names []string, err error) error {
	raise := func(names []string) error { return t.raiseAll(ctx, names) }
	names, err, end := withoutRefused(ctx, t, names, func(n string) string { return n }, err, raise)
	switch {
	case end != nil:
		return end
	case errors.Is(err, scheduler.ErrFenceHeld):
		return holds.Around(ctx, names, err, holds.Ops{Raise: t.raiseAll, Held: t.heldFences(), Settle: t.settleRaise,
			Hold: func(job string, err error) bool {
				js := t.jobs[job]
				if js == nil || t.ended {
					return false
				}
				t.block(js, 0, true, err)
				return true
			}})
	}
	return err
}

// HoldReader is a Ledger that can tell whose fences other sessions hold (the Postgres store): a
// takeover whose raise gave up asks it, rather than raise in parts until the raises find them.
type HoldReader = holds.Reader

// heldFences is the ledger's HeldFences for the term's token (holds.HeldBy); nil when it has none.
func (t *tenure) heldFences() func(ctx context.Context, names []string) []string {
	hr, ok := t.r.opts.Ledger.(HoldReader)
	if !ok {
		return nil
	}
	return holds.HeldBy(hr, t.token, func(jobs int, err error) {
		t.lg.Warn("read the held fences; raising in parts", zap.Int("jobs", jobs), zap.Error(err))
	})
}

// raiseParts is how many RaiseAll calls a large table's fences are raised with at once.
const raiseParts = 4

// raiseAll raises the fences of names to the term's token; a large table in parallel parts,
// since each part waits mostly on round trips to the store.
func (t *tenure) raiseAll(ctx context.Context, names []string) error {
	if len(names) < 4*maxClaimBatch/10 {
		return t.r.opts.Ledger.RaiseAll(ctx, names, t.token)
	}
	return parallel.Parts(ctx, names, raiseParts, func(ctx context.Context, part []string) error { return t.r.opts.Ledger.RaiseAll(ctx, part, t.token) })
}

// reclaimAll takes over runs older leaders left running, and runs them again: in batches of
// ReclaimMany, maxClaimsInFlight at once, each part's runs launched as soon as it is taken over
// (the runs' executors start as the batches land, not after the last one). Their runs are
// launched here, on the loop goroutine.
func (t *tenure) reclaimAll(ctx context.Context, orphans []scheduler.Run) error {
	if orphans = t.takeUnwritten(orphans); len(orphans) <= 1 {
		for _, o := range orphans {
			if err := t.reclaim(ctx, o); err != nil {
				return err
			}
		}
		return nil
	}
	runs, errs := make([]scheduler.Run, len(orphans)), make([]error, len(orphans))
	return parallel.Batches(len(orphans), maxClaimBatch, maxClaimsInFlight, func(_, lo, hi int) {
		got, err := t.led.ReclaimMany(ctx, t.token, t.r.opts.Node, runkey.Keys(orphans[lo:hi]))
		runkey.Reclaimed(orphans[lo:hi], got, err, runs[lo:hi], errs[lo:hi])
	}, func(_, lo, hi int) error {
		for i := lo; i < hi; i++ {
			if err := t.reclaimed(orphans[i], runs[i], errs[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// reclaim takes over a run an older leader left running, and runs it again.
func (t *tenure) reclaim(ctx context.Context, orphan scheduler.Run) error {
	if len(t.takeUnwritten([]scheduler.Run{orphan})) == 0 {
		return nil
	}
	run, err := t.led.Reclaim(ctx, t.token, t.r.opts.Node, orphan.Key())
	return t.reclaimed(orphan, run, err)
}

// reclaimed launches a run taken over, or reports why it could not be.
func (t *tenure) reclaimed(orphan, run scheduler.Run, err error) error {
	switch {
	case errors.Is(err, scheduler.ErrFenced):
		if job, _ := refusal.Job(err, orphan.Job); job != orphan.Job {
			// A batch refused for another job: once that job is blocked, this one is taken over
			// on its own.
			if rerr := t.refused(t.claimCtx, job, err); rerr != nil {
				return rerr
			}
			return t.reclaim(t.claimCtx, orphan)
		}
		return t.refused(t.claimCtx, orphan.Job, err)
	case err != nil: // claimed again shortly: the claim finds what became of the run (ownClaim, reclaim)
		t.retryLater([]scheduler.SlotKey{orphan.Key()}, fmt.Errorf("take over run %d of job %q: %w", orphan.RunID, orphan.Job, err))
		return nil
	}
	t.lg.Info("run taken over", zap.String("job", run.Job), zap.Time("slot", run.ScheduledAt), zap.Int64("run_id", run.RunID),
		zap.Int64("old_token", orphan.Token), zap.Int("attempt", run.Attempt))
	t.launch(nil, run)
	return nil
}
