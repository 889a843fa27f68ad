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

	"scheduler/internal/jobs/internal/catchup"
	"scheduler/internal/jobs/internal/runkey"
)

// catchUp handles the slots due before now that no run finished: per job, catchup.Decide decides;
// then the missed slots are recorded in one batch, orphans closed, and the runs to make
// started (the first of each job at once, the rest queued behind it, in slot order).
func (t *tenure) catchUp(ctx context.Context, specs []*Spec, now time.Time) error {
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
	read := func(what string, fn func() error) { g.Go(func() error { return t.takeoverErr(what, fn()) }) }
	read("read the ledger window", func() (err error) { window, err = ledger.Window(gctx, names, now.Add(-widest), now); return err })
	read("read the last runs", func() (err error) { last, err = ledger.LastScheduled(gctx, names...); return err })
	read("read orphaned runs", func() (err error) { orphans, err = ledger.Orphans(gctx, names...); return err })
	if err := g.Wait(); err != nil {
		return err
	}
	// The orphans of a job blocked meanwhile wait for its unblocking, whose catch-up reads them
	// again: their saved outcomes must stay saved, not be written against a refusing fence.
	// A backfill's runs are its own: the backfill takes them over when it carries on (its slots
	// lie before the window, where catch-up would close them missed).
	orphans = slices.DeleteFunc(orphans, func(o scheduler.Run) bool { return t.isBlocked(o.Job) || o.Backfill })
	// Runs of an earlier term of this process whose executors returned are finished with their
	// outcomes, never run again.
	orphans = t.takeUnwritten(orphans)
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
		closes []scheduler.Completion
		first  []pending
	)
	for _, s := range specs {
		if t.isBlocked(s.Name) {
			continue
		}
		var lastRun *scheduler.Run
		// A backfilled run says nothing of when the job's history began.
		if r, ok := last[s.Name]; ok && !r.Backfill {
			lastRun = &r
		}
		plan, err := catchup.Decide(catchupJob(s), now, windowOf[s.Name], orphansOf[s.Name], lastRun)
		if err != nil {
			t.lg.Error("catch-up", zap.String("job", s.Name), zap.Error(err))
			continue
		}
		t.notices().CaughtUp(s.Notify, plan.Missed, plan.Close, orphansOf[s.Name])
		missed = append(missed, plan.Missed...)
		for _, o := range plan.Ahead {
			t.jobs[s.Name].orphanAhead(o)
		}
		closes = append(closes, plan.Close...)
		if len(plan.Run) == 0 {
			continue
		}
		if t.paused(s.Name) {
			for _, p := range plan.Run {
				if p.Orphan != nil {
					closes = append(closes, catchup.NotRun(*p.Orphan, scheduler.StatusSkipped, reasonPaused))
				} else {
					missed = append(missed, scheduler.Outcome{Slot: p.Key, Status: scheduler.StatusSkipped, Reason: reasonPaused})
				}
			}
			continue
		}
		run := make([]pending, len(plan.Run))
		for i, p := range plan.Run {
			t.lg.Info("catch-up run", zap.String("job", s.Name), zap.Time("slot", p.Key.At), zap.Bool("orphan", p.Orphan != nil))
			if h := t.r.opts.Hooks.CatchupRun; h != nil {
				h(s.Name)
			}
			run[i] = pending{slot: p.Key, orphan: p.Orphan}
		}
		first = append(first, run[0])
		t.jobs[s.Name].queue = append(t.jobs[s.Name].queue, run[1:]...)
	}
	// Closing orphans, recording missed slots and claiming the runs touch different rows, so the
	// first two go on beside the claims, off the loop: completeAll and recordAll read only
	// t.token and t.r.opts, never written once the loop started, and return their answers. What
	// the loop owns (launching runs, blocking a job, the backlog) happens on it, in start, and in
	// closed and recorded once both writes have returned.
	var (
		w          sync.WaitGroup
		closeErrs  []error
		recordErrs []recordBatch
	)
	w.Go(func() { closeErrs = t.completeAll(ctx, closes) })
	w.Go(func() { recordErrs = t.recordAll(ctx, missed) })
	err := t.start(ctx, first)
	w.Wait()
	if cerr := t.closed(ctx, closes, closeErrs); cerr != nil {
		return cerr
	}
	if rerr := t.recorded(ctx, missed, recordErrs); rerr != nil {
		return rerr
	}
	return err
}

func (t *tenure) takeoverErr(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, scheduler.ErrFenced):
		return t.fenced("", err)
	}
	return fmt.Errorf("catch-up: %s: %w", what, err)
}

// pending is a slot waiting to run: a fresh one to claim, a run this term claimed ahead, or an
// orphan of an older leader to take over.
type pending struct {
	js     *jobState // nil: looked up by name
	slot   scheduler.SlotKey
	orphan *scheduler.Run
	// claim, with claimed, is the run this term claimed ahead, inline: a herd's are not copied.
	claim   runkey.Claim
	claimed bool
	held    bool // the slot's claim failed when it fired, and waited for the store (retryLater)
}

// runID is the run p's slot has in the ledger already (claimed ahead, or an orphan); false: none.
func (p pending) runID() (int64, bool) {
	if p.orphan != nil { // never claimed as well
		return p.orphan.RunID, true
	}
	return p.claim.RunID, p.claimed
}
