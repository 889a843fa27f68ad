package jobs

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"scheduler"

	"scheduler/internal/jobs/internal/attempts"
	"scheduler/internal/jobs/internal/catchup"
	"scheduler/internal/jobs/internal/overlap"
	"scheduler/internal/schedule"
)

// Overlap says what happens when a job's slot is due while an earlier run of it still runs;
// package overlap applies it.
type Overlap = overlap.Policy

// The overlap policies.
const (
	OverlapSkip    = overlap.Skip    // record the new slot skipped
	OverlapQueue   = overlap.Queue   // run the new slot after the current run
	OverlapReplace = overlap.Replace // cancel the current run, then run the new slot
	OverlapAllow   = overlap.Allow   // run both at once
)

// Misfire says what a new leader does with slots that were due within the catch-up window but
// never ran (or were left running by an older leader); package catchup applies it.
type Misfire = catchup.Misfire

// The misfire policies.
const (
	MisfireSkip = catchup.MisfireSkip // record them missed
	MisfireOnce = catchup.MisfireOnce // run the latest, record the rest missed
	MisfireAll  = catchup.MisfireAll  // run them all, oldest first, one after another
)

// Spec is one job of the cron table, as the runner runs it.
type Spec struct {
	Name         string
	Schedule     *schedule.Schedule
	Executor     scheduler.Executor
	Timeout      time.Duration // per attempt; > 0
	Retries      int           // retries after a failed attempt
	RetryBackoff time.Duration // wait before the first retry; doubles per retry up to MaxBackoff
	Overlap      Overlap
	Misfire      Misfire
	Catchup      time.Duration // how far back a new leader looks for missed slots
	Jitter       time.Duration // fire each slot Jitter(name, slot, Jitter) after it
	Enabled      bool
	// Notify makes the notice a slot's final outcome queues in the outbox (nil: none).
	Notify func(scheduler.Run) *scheduler.Notice
}

// fireAt is when slot fires: the slot plus its deterministic jitter.
func (s *Spec) fireAt(slot time.Time) time.Time {
	return slot.Add(schedule.Jitter(s.Name, slot, s.Jitter))
}

// attemptJob is what running the job's attempts reads of it.
func (s *Spec) attemptJob() attempts.Job {
	return attempts.Job{Name: s.Name, Executor: s.Executor, Timeout: s.Timeout, Retries: s.Retries,
		RetryBackoff: s.RetryBackoff, Location: s.Schedule.Location()}
}

// catchupJob is what catch-up planning reads of the job.
func (s *Spec) catchupJob() catchup.Job {
	return catchup.Job{Name: s.Name, Schedule: s.Schedule, Misfire: s.Misfire, Window: s.Catchup, Jitter: s.Jitter, Enabled: s.Enabled,
		Retries: s.Retries}
}

// validate checks what the runner relies on; the configuration layer reports user errors.
func (s *Spec) validate() error {
	var errs []error
	check := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(s.Name == "", "empty name")
	check(s.Schedule == nil, "no schedule")
	check(s.Executor == nil, "no executor")
	check(s.Timeout <= 0, "timeout %s: must be positive", s.Timeout)
	check(s.Retries < 0 || s.RetryBackoff < 0 || s.Catchup < 0 || s.Jitter < 0, "negative retries, retry backoff, catchup or jitter")
	check(!slices.Contains([]Overlap{OverlapSkip, OverlapQueue, OverlapReplace, OverlapAllow}, s.Overlap), "overlap %q: unknown", s.Overlap)
	check(!slices.Contains([]Misfire{MisfireSkip, MisfireOnce, MisfireAll}, s.Misfire), "misfire %q: unknown", s.Misfire)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("job %q: %w", s.Name, err)
	}
	return nil
}

// sameTiming reports whether a and b fire at the same instants: a reload keeps the job's entry.
func sameTiming(a, b *Spec) bool {
	return a.Schedule.String() == b.Schedule.String() &&
		a.Schedule.Location().String() == b.Schedule.Location().String() &&
		a.Jitter == b.Jitter && a.Enabled == b.Enabled
}
