package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"scheduler"

	"scheduler/internal/jobs/internal/parallel"
	"scheduler/internal/jobs/internal/refusal"
)

// takeOver raises every job's fence, then catches up on missed slots and seeds the timers.
func (t *tenure) takeOver(ctx context.Context, specs []*Spec) error {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
		t.addJob(s)
	}
	if err := t.raiseUnblocked(ctx, names); err != nil {
		return fmt.Errorf("raise the fences of %d jobs to token %d: %w", len(names), t.token, err)
	}
	for _, js := range t.blocked {
		// A job blocked at takeover missed the takeover's catch-up: once its fence is free (a
		// held fence is usually an earlier leader's last write; a raised one is reset by an
		// operator), it is taken over like the others (orphans and their kept outcomes,
		// missed slots).
		js.catchUp = true
	}
	now := t.r.clock.Now()
	if err := t.catchUp(ctx, specs, now); err != nil {
		return err
	}
	for _, s := range specs {
		t.schedule(t.jobs[s.Name], now)
	}
	t.lg.Info("leading", zap.Int("jobs", len(specs)))
	return nil
}

// raiseUnblocked raises the fences of names; a job whose fence is above the token is blocked
// (when etcd confirms the term) and the others are raised again without it.
func (t *tenure) raiseUnblocked(ctx context.Context, names []string) error {
	raise := func(names []string) error { return t.raiseAll(ctx, names) }
	names, err, end := withoutRefused(ctx, t, names, func(n string) string { return n }, raise(names), raise)
	switch {
	case end != nil:
		return end
	case errors.Is(err, scheduler.ErrFenceHeld):
		return t.raiseAround(ctx, names, err)
	}
	return err
}

// heldParts is how many parts raiseAround splits a set of jobs into.
const heldParts = 8

// raiseAround raises the fences of names after a raise of them all gave up waiting for a
// transaction with an older token (err): in parts, in parallel, each part that gives up split
// again, until the jobs whose fences are held are found. Those are held back (blocked) and
// raised again later; the others run. One open transaction on one job's fence, such as a job
// role's fence_verify, must not stop every job.
func (t *tenure) raiseAround(ctx context.Context, names []string, err error) error {
	if len(names) == 1 {
		if js := t.jobs[names[0]]; js != nil && !t.ended {
			t.block(js, 0, true, err)
			return nil
		}
		return err
	}
	parts := slices.Collect(slices.Chunk(names, (len(names)+heldParts-1)/heldParts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, part := range parts {
		wg.Go(func() { errs[i] = t.r.opts.Ledger.RaiseAll(ctx, part, t.token) })
	}
	wg.Wait()
	for i, part := range parts {
		switch {
		case errs[i] == nil:
		case errors.Is(errs[i], scheduler.ErrFenceHeld):
			if err := t.raiseAround(ctx, part, errs[i]); err != nil {
				return err
			}
		case errors.Is(errs[i], scheduler.ErrFenced):
			if err := t.raiseUnblocked(ctx, part); err != nil {
				return err
			}
		default:
			return errs[i]
		}
	}
	return nil
}

// raiseParts is how many RaiseAll calls a large table's fences are raised with at once.
const raiseParts = 4

// raiseAll raises the fences of names to the term's token; a large table in parallel parts,
// since each part waits mostly on round trips to the store.
func (t *tenure) raiseAll(ctx context.Context, names []string) error {
	if len(names) < 4*maxClaimBatch/10 {
		return t.r.opts.Ledger.RaiseAll(ctx, names, t.token)
	}
	g, gctx := errgroup.WithContext(ctx)
	for part := range slices.Chunk(names, (len(names)+raiseParts-1)/raiseParts) {
		g.Go(func() error { return t.r.opts.Ledger.RaiseAll(gctx, part, t.token) })
	}
	return g.Wait()
}

// reclaimAll takes over runs older leaders left running, and runs them again: in batches of
// ReclaimMany, maxClaimsInFlight at once, each part's runs launched as soon as it is taken over
// (the runs' executors start as the batches land, not after the last one). Their runs are
// launched here, on the loop goroutine.
func (t *tenure) reclaimAll(ctx context.Context, orphans []scheduler.Run) error {
	orphans, written := t.takeUnwritten(orphans)
	if err := t.closeRuns(ctx, written); err != nil {
		return err
	}
	if len(orphans) <= 1 {
		for _, o := range orphans {
			if err := t.reclaim(ctx, o); err != nil {
				return err
			}
		}
		return nil
	}
	runs := make([]scheduler.Run, len(orphans))
	errs := make([]error, len(orphans))
	return parallel.Batches(len(orphans), maxClaimBatch, maxClaimsInFlight, func(_, lo, hi int) {
		part := orphans[lo:hi]
		slots := make([]scheduler.SlotKey, len(part))
		for i, o := range part {
			slots[i] = o.Key()
		}
		got, err := t.r.opts.Ledger.ReclaimMany(ctx, t.token, t.r.opts.Node, slots)
		if err == nil && len(got) != len(part) {
			err = fmt.Errorf("the ledger answered %d takeovers for %d runs", len(got), len(part))
		}
		for i := range part {
			switch {
			case err != nil:
				errs[lo+i] = err
			case !got[i].Written:
				errs[lo+i] = fmt.Errorf("run %d of job %q is no longer an orphan", part[i].RunID, part[i].Job)
			default:
				runs[lo+i] = got[i].Run
			}
		}
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
	if _, written := t.takeUnwritten([]scheduler.Run{orphan}); len(written) > 0 {
		return t.closeRuns(ctx, written)
	}
	run, err := t.r.opts.Ledger.Reclaim(ctx, t.token, t.r.opts.Node, orphan.Key())
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
	case err != nil:
		t.lg.Warn("take over run", zap.String("job", orphan.Job), zap.Time("slot", orphan.ScheduledAt), zap.Int64("run_id", orphan.RunID), zap.Error(err))
		return nil
	}
	t.lg.Info("run taken over", zap.String("job", run.Job), zap.Time("slot", run.ScheduledAt), zap.Int64("run_id", run.RunID),
		zap.Int64("old_token", orphan.Token), zap.Int("attempt", run.Attempt))
	t.launch(nil, run)
	return nil
}
