package catchup

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"scheduler"

	"scheduler/internal/schedule"
)

// maxMissedRecords bounds how many slots older than the catch-up window one takeover records as
// missed for one job; a longer outage of a frequent job records the newest one with a note.
const maxMissedRecords = 1000

// Misfire says what a new leader does with slots that were due within the catch-up window but
// never ran (or were left running by an older leader).
type Misfire string

// The misfire policies.
const (
	MisfireSkip Misfire = "skip" // record them missed
	MisfireOnce Misfire = "once" // run the latest, record the rest missed
	MisfireAll  Misfire = "all"  // run them all, oldest first, one after another
)

// MaxTakeovers is how many more attempts than its retries allow a run gets when its leader
// stops during them: such a run is taken over by the next leader, and again, but a job that
// brings its leader down (a fork bomb, a memory hog) must not bring down every leader in turn
// for as long as its slot is in the catch-up window. Past them it is closed failed.
const MaxTakeovers = 3

// Job is what Decide reads of one job: its name, timing and policy.
type Job struct {
	Name     string
	Schedule *schedule.Schedule
	Misfire  Misfire
	Window   time.Duration // how far back a new leader looks for missed slots
	Jitter   time.Duration // each slot fires schedule.Jitter(Name, slot, Jitter) after it
	Enabled  bool
	Retries  int // retries after a failed attempt
}

// fireAt is when slot fires: the slot plus its deterministic jitter.
func (j Job) fireAt(slot time.Time) time.Time {
	return slot.Add(schedule.Jitter(j.Name, slot, j.Jitter))
}

// onSchedule reports whether at is one of the job's slots.
func (j Job) onSchedule(at time.Time) bool {
	return j.Schedule.Next(at.Add(-time.Nanosecond)).At.Equal(at)
}

// Slot is a past slot to run: a fresh one to claim, or an orphan of an older leader to take
// over (Orphan set).
type Slot struct {
	Key    scheduler.SlotKey
	Orphan *scheduler.Run
}

// Plan is what a new leader does about one job's past slots.
type Plan struct {
	Run    []Slot                 // to run, oldest first
	Missed []scheduler.Outcome    // slots never started, recorded missed without running
	Close  []scheduler.Completion // orphans finished as missed without running
	Ahead  []scheduler.Run        // orphans of slots still to come, claimed ahead by an older leader
}

// Decide decides, for one job, what to do with the slots due before now: those within the
// catch-up window that have no finished run are handled per the misfire policy; older ones
// since the job's last scheduled run are recorded missed. A job that has no scheduled run (at
// most manual ones) is new and owes nothing before now. window holds the job's runs of the
// window, orphans its runs left running under older tokens, last its newest scheduled run (nil
// if none).
func Decide(job Job, now time.Time, window []scheduler.Run, orphans []scheduler.Run, last *scheduler.Run) (Plan, error) {
	var plan Plan
	windowStart := now.Add(-job.Window) // from may move past it, for the slots that never started only
	from := windowStart

	byAt := make(map[int64]scheduler.Run, len(window))
	for _, r := range window {
		if !r.Manual {
			byAt[r.ScheduledAt.UnixMicro()] = r
		}
	}
	orphanAt := make(map[int64]bool, len(orphans))
	live := orphans[:0:0]
	for _, o := range orphans {
		if o.Attempt >= 1+job.Retries+MaxTakeovers {
			plan.Close = append(plan.Close, NotRun(o, scheduler.StatusFailed,
				fmt.Sprintf("its leaders stopped during each of its %d attempts (%d retries and %d takeovers allowed)", o.Attempt, job.Retries, MaxTakeovers)))
			continue
		}
		live = append(live, o)
		orphanAt[o.ScheduledAt.UnixMicro()] = !o.Manual
	}
	orphans = live

	// Slots of the window that are due: no run, or an orphan. A job without any run in the
	// ledger is new: its history starts now, and nothing before now is owed.
	var candidates []Slot
	if job.Enabled && last != nil {
		if last.ScheduledAt.After(from) {
			from = last.ScheduledAt.Add(-time.Nanosecond) // the window's earlier slots predate the job
		}
		slots, err := job.Schedule.Between(from, now)
		if errors.Is(err, schedule.ErrTooManySlots) {
			slots, err = newestDue(job, from, now), nil
		}
		if err != nil {
			return plan, fmt.Errorf("catch-up of job %q: %w", job.Name, err)
		}
		for _, sl := range slots {
			if job.fireAt(sl.At).After(now) {
				continue // not due yet: the firing loop runs it
			}
			key := sl.At.UnixMicro()
			r, ok := byAt[key]
			switch {
			case !ok:
				candidates = append(candidates, Slot{Key: scheduler.SlotKey{Job: job.Name, At: sl.At}})
			case r.Status == scheduler.StatusRunning && orphanAt[key]:
				r := r
				candidates = append(candidates, Slot{Key: r.Key(), Orphan: &r})
			}
		}
	}

	// Misfire policy on the window's candidates that never started. An orphan of the window
	// was started by an older leader (or claimed just before it fired): it is always finished,
	// whatever the policy, so a slot interrupted by a failover is never left half done.
	var fresh []int
	for i, c := range candidates {
		if c.Orphan == nil {
			fresh = append(fresh, i)
		}
	}
	keep := map[int]bool{}
	switch job.Misfire {
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
		case keep[i] || c.Orphan != nil:
			plan.Run = append(plan.Run, c)
		default:
			plan.Missed = append(plan.Missed, scheduler.Outcome{Slot: c.Key, Status: scheduler.StatusMissed, Reason: fmt.Sprintf("no leader at the slot; misfire %s", job.Misfire)})
		}
	}

	// The other orphans: manual runs are always finished (someone asked for them); a scheduled
	// slot still to come was claimed ahead by an older leader, and the firing loop takes it over
	// when the slot fires; scheduled ones older than the window, of a disabled job, or no longer
	// on its schedule are closed; the rest are of the window, and finished.
	handled := make(map[int64]bool, len(candidates))
	for _, c := range candidates {
		if c.Orphan != nil {
			handled[c.Orphan.RunID] = true
		}
	}
	for _, o := range orphans {
		switch {
		case handled[o.RunID]:
		case o.Manual:
			o := o
			plan.Run = append(plan.Run, Slot{Key: o.Key(), Orphan: &o})
		case job.Enabled && job.fireAt(o.ScheduledAt).After(now) && job.onSchedule(o.ScheduledAt):
			plan.Ahead = append(plan.Ahead, o)
		case !o.ScheduledAt.After(windowStart):
			plan.Close = append(plan.Close, NotRun(o, scheduler.StatusMissed, "left running by an older leader, before the catch-up window"))
		case job.Enabled && job.onSchedule(o.ScheduledAt):
			// Inside the window but older than the job's newest run (a later slot was claimed
			// ahead, queued or recorded skipped before the leader stopped), so not among the
			// candidates: it was started all the same, and is finished like them.
			o := o
			plan.Run = append(plan.Run, Slot{Key: o.Key(), Orphan: &o})
		default:
			plan.Close = append(plan.Close, NotRun(o, scheduler.StatusMissed, "left running by an older leader; the job is disabled or the slot is no longer on its schedule"))
		}
	}

	// Slots between the job's last run and the window, never started: missed.
	if last != nil && job.Enabled && last.ScheduledAt.Before(from) {
		older, err := job.Schedule.Between(last.ScheduledAt, from)
		if errors.Is(err, schedule.ErrTooManySlots) || len(older) > maxMissedRecords {
			if sl, ok := job.Schedule.Last(last.ScheduledAt, from); ok {
				plan.Missed = append(plan.Missed, scheduler.Outcome{
					Slot: scheduler.SlotKey{Job: job.Name, At: sl.At}, Status: scheduler.StatusMissed,
					Reason: fmt.Sprintf("no leader at the slot, before the catch-up window; earlier slots since %s were not recorded one by one", last.ScheduledAt.UTC().Format(time.RFC3339)),
				})
			}
		} else if err != nil {
			return plan, fmt.Errorf("catch-up of job %q: %w", job.Name, err)
		} else {
			for _, sl := range older {
				// A slot whose jittered fire time is still to come (a jitter longer than the
				// window) is the firing loop's.
				if _, seen := byAt[sl.At.UnixMicro()]; seen || !sl.At.After(last.ScheduledAt) || job.fireAt(sl.At).After(now) {
					continue
				}
				plan.Missed = append(plan.Missed, scheduler.Outcome{Slot: scheduler.SlotKey{Job: job.Name, At: sl.At}, Status: scheduler.StatusMissed, Reason: "no leader at the slot, before the catch-up window"})
			}
		}
	}
	sort.SliceStable(plan.Run, func(i, j int) bool { return plan.Run[i].Key.At.Before(plan.Run[j].Key.At) })
	return plan, nil
}

// newestDue is the window's slots for a window that holds more than schedule.MaxBetween of
// them (a one-second schedule and a window of days): the newest that is due and the one before
// it, which stands for the others; they are decided by the misfire policy as any, and the
// others are not recorded one by one. Before, such a window made the catch-up fail: no slot of
// it was run or recorded.
func newestDue(job Job, from, now time.Time) []schedule.Slot {
	newest, ok := job.Schedule.Last(from, now)
	for ok && job.fireAt(newest.At).After(now) {
		newest, ok = job.Schedule.Last(from, newest.At.Add(-time.Nanosecond))
	}
	if !ok {
		return nil
	}
	if before, ok := job.Schedule.Last(from, newest.At.Add(-time.Nanosecond)); ok {
		return []schedule.Slot{before, newest}
	}
	return []schedule.Slot{newest}
}

// NotRun finishes an orphan that is not run again with status (missed, skipped) if it never
// started (claimed ahead, attempt 0); one that started ran, and its outcome is unknown, so it is
// closed failed, saying so: a run that started is never recorded as a slot that did not run.
func NotRun(o scheduler.Run, status scheduler.Status, reason string) scheduler.Completion {
	if o.Attempt == 0 {
		return scheduler.Completion{RunID: o.RunID, Job: o.Job, Status: status, Reason: reason}
	}
	return scheduler.Completion{RunID: o.RunID, Job: o.Job, Status: scheduler.StatusFailed, Attempt: o.Attempt,
		Error:  "the run's outcome was never recorded: its leader stopped before writing it",
		Reason: fmt.Sprintf("%s; it started (attempt %d) and is not run again", reason, o.Attempt)}
}
