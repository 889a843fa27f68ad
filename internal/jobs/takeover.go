package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"scheduler"
)

// takeOver raises every job's fence, then catches up on missed slots and seeds the timers.
func (t *term) takeOver(ctx context.Context, specs []*Spec) error {
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
func (t *term) raiseUnblocked(ctx context.Context, names []string) error {
	for {
		err := t.raiseAll(ctx, names)
		if errors.Is(err, scheduler.ErrFenceHeld) {
			return t.raiseAround(ctx, names, err)
		}
		if !errors.Is(err, scheduler.ErrFenced) {
			return err
		}
		if rerr := t.refused(ctx, "", err); rerr != nil {
			return rerr
		}
		rest := slices.DeleteFunc(slices.Clone(names), t.isBlocked)
		if len(rest) == len(names) {
			return t.fenced("", err)
		}
		if names = rest; len(names) == 0 {
			return nil
		}
	}
}

// heldParts is how many parts raiseAround splits a set of jobs into.
const heldParts = 8

// raiseAround raises the fences of names after a raise of them all gave up waiting for a
// transaction with an older token (err): in parts, in parallel, each part that gives up split
// again, until the jobs whose fences are held are found. Those are held back (blocked) and
// raised again later; the others run. One open transaction on one job's fence, such as a job
// role's fence_verify, must not stop every job.
func (t *term) raiseAround(ctx context.Context, names []string, err error) error {
	if len(names) == 1 {
		if js := t.jobs[names[0]]; js != nil && !t.ended {
			t.hold(js, err)
			return nil
		}
		return err
	}
	size := (len(names) + heldParts - 1) / heldParts
	var parts [][]string
	for lo := 0; lo < len(names); lo += size {
		parts = append(parts, names[lo:min(lo+size, len(names))])
	}
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
func (t *term) raiseAll(ctx context.Context, names []string) error {
	if len(names) < 4*maxClaimBatch/10 {
		return t.r.opts.Ledger.RaiseAll(ctx, names, t.token)
	}
	g, gctx := errgroup.WithContext(ctx)
	size := (len(names) + raiseParts - 1) / raiseParts
	for lo := 0; lo < len(names); lo += size {
		part := names[lo:min(lo+size, len(names))]
		g.Go(func() error { return t.r.opts.Ledger.RaiseAll(gctx, part, t.token) })
	}
	return g.Wait()
}

// catchUp handles the slots due before now that no run finished: per job, planCatchup decides;
// then the missed slots are recorded in one batch, orphans closed, and the runs to make
// started (the first of each job at once, the rest queued behind it, in slot order).
func (t *term) catchUp(ctx context.Context, specs []*Spec, now time.Time) error {
	names := make([]string, len(specs))
	var widest time.Duration
	for i, s := range specs {
		names[i] = s.Name
		widest = max(widest, s.Catchup)
	}
	ledger := t.r.opts.Ledger
	// The three reads are independent: they go in parallel.
	var (
		window, orphans []scheduler.Run
		last            map[string]scheduler.Run
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		if window, err = ledger.Window(gctx, names, now.Add(-widest), now); err != nil {
			return t.takeoverErr("read the ledger window", err)
		}
		return nil
	})
	g.Go(func() (err error) {
		if last, err = ledger.Last(gctx, names...); err != nil {
			return t.takeoverErr("read the last runs", err)
		}
		return nil
	})
	g.Go(func() (err error) {
		if orphans, err = ledger.Orphans(gctx, names...); err != nil {
			return t.takeoverErr("read orphaned runs", err)
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	// The orphans of a job blocked meanwhile wait for its unblocking, whose catch-up reads them
	// again: their saved outcomes must stay saved, not be written against a refusing fence.
	orphans = slices.DeleteFunc(orphans, func(o scheduler.Run) bool { return t.isBlocked(o.Job) })
	// Runs of an earlier term of this process whose executors returned are finished with their
	// outcomes, never run again.
	orphans, closes := t.takeUnwritten(orphans)
	windowOf := map[string][]scheduler.Run{}
	for _, r := range window {
		windowOf[r.Job] = append(windowOf[r.Job], r)
	}
	orphansOf := map[string][]scheduler.Run{}
	for _, r := range orphans {
		orphansOf[r.Job] = append(orphansOf[r.Job], r)
	}

	var (
		missed []scheduler.Outcome
		first  []pending
	)
	for _, s := range specs {
		if t.isBlocked(s.Name) {
			continue
		}
		var lastRun *scheduler.Run
		if r, ok := last[s.Name]; ok {
			lastRun = &r
		}
		plan, err := planCatchup(s, now, windowOf[s.Name], orphansOf[s.Name], lastRun)
		if err != nil {
			t.lg.Error("catch-up", zap.String("job", s.Name), zap.Error(err))
			continue
		}
		missed = append(missed, plan.missed...)
		for _, o := range plan.ahead {
			t.jobs[s.Name].orphanAhead(o)
		}
		closes = append(closes, plan.close...)
		if len(plan.run) == 0 {
			continue
		}
		if t.r.opts.Paused != nil && t.r.opts.Paused(s.Name) {
			for _, p := range plan.run {
				if p.orphan != nil {
					closes = append(closes, orphanNotRun(*p.orphan, scheduler.StatusSkipped, reasonPaused))
				} else {
					missed = append(missed, scheduler.Outcome{Slot: p.slot, Status: scheduler.StatusSkipped, Reason: "paused"})
				}
			}
			continue
		}
		for _, p := range plan.run {
			t.lg.Info("catch-up run", zap.String("job", s.Name), zap.Time("slot", p.slot.At), zap.Bool("orphan", p.orphan != nil))
			if h := t.r.opts.Hooks.CatchupRun; h != nil {
				h(s.Name)
			}
		}
		first = append(first, plan.run[0])
		t.jobs[s.Name].queue = append(t.jobs[s.Name].queue, plan.run[1:]...)
	}
	// Closing orphans, recording missed slots and claiming the runs touch different rows: the
	// writes of the first two go on beside the claims, which launch runs and so stay on the loop
	// goroutine, as does settling the answers (a refusal may block a job).
	var (
		w          sync.WaitGroup
		closeErrs  []error
		recordErrs []error
	)
	if len(closes) > 0 {
		w.Go(func() { closeErrs = t.completeAll(ctx, closes) })
	}
	w.Go(func() { recordErrs = t.recordAll(ctx, missed) })
	err := t.start(ctx, first)
	w.Wait()
	if len(closes) > 0 {
		if cerr := t.closed(ctx, closes, closeErrs); cerr != nil {
			return cerr
		}
	}
	if rerr := t.recorded(ctx, missed, recordErrs); rerr != nil {
		return rerr
	}
	return err
}

func (t *term) takeoverErr(what string, err error) error {
	if errors.Is(err, scheduler.ErrFenced) {
		return t.fenced("", err)
	}
	return fmt.Errorf("catch-up: %s: %w", what, err)
}
