package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"scheduler"

	"scheduler/internal/schedule"
)

// maxMissedRecords bounds how many slots older than the catch-up window one takeover records as
// missed for one job; a longer outage of a frequent job records the newest one with a note.
const maxMissedRecords = 1000

// catchUp handles the slots due before now that no run finished: per job, planCatchup decides;
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
	read := func(what string, fn func() error) {
		g.Go(func() error {
			if err := fn(); err != nil {
				return t.takeoverErr(what, err)
			}
			return nil
		})
	}
	read("read the ledger window", func() (err error) { window, err = ledger.Window(gctx, names, now.Add(-widest), now); return err })
	read("read the last runs", func() (err error) { last, err = ledger.Last(gctx, names...); return err })
	read("read orphaned runs", func() (err error) { orphans, err = ledger.Orphans(gctx, names...); return err })
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
		if t.paused(s.Name) {
			for _, p := range plan.run {
				if p.orphan != nil {
					closes = append(closes, orphanNotRun(*p.orphan, scheduler.StatusSkipped, reasonPaused))
				} else {
					missed = append(missed, scheduler.Outcome{Slot: p.slot, Status: scheduler.StatusSkipped, Reason: reasonPaused})
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
	// Closing orphans, recording missed slots and claiming the runs touch different rows, so the
	// first two go on beside the claims. They run off the loop, but touch none of the loop's
	// state: completeAll and recordAll read only t.token and t.r.opts, set before the loop
	// started and never written, and return their answers. Everything the loop owns (launching
	// runs, blocking a job on a refusal, the backlog) happens here, on the loop, in start and in
	// closed and recorded once both writes have returned.
	var (
		w          sync.WaitGroup
		closeErrs  []error
		recordErrs []error
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
	if errors.Is(err, scheduler.ErrFenced) {
		return t.fenced("", err)
	}
	return fmt.Errorf("catch-up: %s: %w", what, err)
}

// pending is a slot waiting to run: a fresh one to claim, a run this term claimed ahead, or an
// orphan of an older leader to take over.
type pending struct {
	js      *jobState // nil: looked up by name
	slot    scheduler.SlotKey
	claimed *scheduler.Run
	orphan  *scheduler.Run
	// held: the slot's claim failed when it fired, and waited for the store (retryLater).
	held bool
}

// catchupPlan is what a new leader does about one job's past slots.
type catchupPlan struct {
	run    []pending              // to run, oldest first
	missed []scheduler.Outcome    // slots never started, recorded missed without running
	close  []scheduler.Completion // orphans finished as missed without running
	ahead  []scheduler.Run        // orphans of slots still to come, claimed ahead by an older leader
}

// planCatchup decides, for one job, what to do with the slots due before now: those within the
// catch-up window that have no finished run are handled per the misfire policy; older ones
// since the job's last run are recorded missed. A job that has no run at all is new and owes
// nothing before now. window holds the job's runs of the window,
// orphans its runs left running under older tokens, last its newest run (nil if none).
func planCatchup(spec *Spec, now time.Time, window []scheduler.Run, orphans []scheduler.Run, last *scheduler.Run) (catchupPlan, error) {
	var plan catchupPlan
	from := now.Add(-spec.Catchup)

	byAt := make(map[int64]scheduler.Run, len(window))
	for _, r := range window {
		if !r.Manual {
			byAt[r.ScheduledAt.UnixMicro()] = r
		}
	}
	orphanAt := make(map[int64]bool, len(orphans))
	for _, o := range orphans {
		orphanAt[o.ScheduledAt.UnixMicro()] = !o.Manual
	}

	// Slots of the window that are due: no run, or an orphan. A job without any run in the
	// ledger is new: its history starts now, and nothing before now is owed.
	var candidates []pending
	if spec.Enabled && last != nil {
		if last.ScheduledAt.After(from) {
			from = last.ScheduledAt.Add(-time.Nanosecond) // the window's earlier slots predate the job
		}
		slots, err := spec.Schedule.Between(from, now)
		if err != nil {
			return plan, fmt.Errorf("catch-up of job %q: %w", spec.Name, err)
		}
		for _, sl := range slots {
			if spec.fireAt(sl.At).After(now) {
				continue // not due yet: the firing loop runs it
			}
			key := sl.At.UnixMicro()
			r, ok := byAt[key]
			switch {
			case !ok:
				candidates = append(candidates, pending{slot: scheduler.SlotKey{Job: spec.Name, At: sl.At}})
			case r.Status == scheduler.StatusRunning && orphanAt[key]:
				r := r
				candidates = append(candidates, pending{slot: r.Key(), orphan: &r})
			}
		}
	}

	// Misfire policy on the window's candidates that never started. An orphan of the window
	// was started by an older leader (or claimed just before it fired): it is always finished,
	// whatever the policy, so a slot interrupted by a failover is never left half done.
	var fresh []int
	for i, c := range candidates {
		if c.orphan == nil {
			fresh = append(fresh, i)
		}
	}
	keep := map[int]bool{}
	switch spec.Misfire {
	case MisfireAll:
		for _, i := range fresh {
			keep[i] = true
		}
	case MisfireOnce:
		if len(fresh) > 0 {
			keep[fresh[len(fresh)-1]] = true
		}
	}
	for i, c := range candidates {
		switch {
		case keep[i] || c.orphan != nil:
			plan.run = append(plan.run, c)
		default:
			plan.missed = append(plan.missed, scheduler.Outcome{Slot: c.slot, Status: scheduler.StatusMissed, Reason: fmt.Sprintf("no leader at the slot; misfire %s", spec.Misfire)})
		}
	}

	// The other orphans: manual runs are always finished (someone asked for them); a scheduled
	// slot still to come was claimed ahead by an older leader, and the firing loop takes it over
	// when the slot fires; scheduled ones older than the window, of a disabled job, or no longer
	// on its schedule are closed.
	handled := make(map[int64]bool, len(candidates))
	for _, c := range candidates {
		if c.orphan != nil {
			handled[c.orphan.RunID] = true
		}
	}
	for _, o := range orphans {
		switch {
		case handled[o.RunID]:
		case o.Manual:
			o := o
			plan.run = append(plan.run, pending{slot: o.Key(), orphan: &o})
		case spec.Enabled && spec.fireAt(o.ScheduledAt).After(now) && spec.onSchedule(o.ScheduledAt):
			plan.ahead = append(plan.ahead, o)
		case !o.ScheduledAt.After(from):
			plan.close = append(plan.close, orphanNotRun(o, scheduler.StatusMissed, "left running by an older leader, before the catch-up window"))
		default:
			plan.close = append(plan.close, orphanNotRun(o, scheduler.StatusMissed, "left running by an older leader; the job is disabled or the slot is no longer on its schedule"))
		}
	}

	// Slots between the job's last run and the window, never started: missed.
	if last != nil && spec.Enabled && last.ScheduledAt.Before(from) {
		older, err := spec.Schedule.Between(last.ScheduledAt, from)
		if errors.Is(err, schedule.ErrTooManySlots) || len(older) > maxMissedRecords {
			if sl, ok := spec.Schedule.Last(last.ScheduledAt, from); ok {
				plan.missed = append(plan.missed, scheduler.Outcome{
					Slot: scheduler.SlotKey{Job: spec.Name, At: sl.At}, Status: scheduler.StatusMissed,
					Reason: fmt.Sprintf("no leader at the slot, before the catch-up window; earlier slots since %s were not recorded one by one", last.ScheduledAt.UTC().Format(time.RFC3339)),
				})
			}
		} else if err != nil {
			return plan, fmt.Errorf("catch-up of job %q: %w", spec.Name, err)
		} else {
			for _, sl := range older {
				if _, seen := byAt[sl.At.UnixMicro()]; seen || !sl.At.After(last.ScheduledAt) {
					continue
				}
				plan.missed = append(plan.missed, scheduler.Outcome{Slot: scheduler.SlotKey{Job: spec.Name, At: sl.At}, Status: scheduler.StatusMissed, Reason: "no leader at the slot, before the catch-up window"})
			}
		}
	}
	sort.SliceStable(plan.run, func(i, j int) bool { return plan.run[i].slot.At.Before(plan.run[j].slot.At) })
	return plan, nil
}

// orphanNotRun finishes an orphan that is not run again with status (missed, skipped) if it never
// started (claimed ahead, attempt 0); one that started ran, and its outcome is unknown, so it is
// closed failed, saying so: a run that started is never recorded as a slot that did not run.
func orphanNotRun(o scheduler.Run, status scheduler.Status, reason string) scheduler.Completion {
	if o.Attempt == 0 {
		return scheduler.Completion{RunID: o.RunID, Job: o.Job, Status: status, Reason: reason}
	}
	return scheduler.Completion{RunID: o.RunID, Job: o.Job, Status: scheduler.StatusFailed, Attempt: o.Attempt,
		Error:  "the run's outcome was never recorded: its leader stopped before writing it",
		Reason: fmt.Sprintf("%s; it started (attempt %d) and is not run again", reason, o.Attempt)}
}
