// Package jobspec is what the runner reads of one job of the cron table (Spec): its timing, its
// policies (overlap, misfire) and its executor, and the check of what the runner relies on.
package jobspec

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"scheduler"

	"scheduler/internal/schedule"
)

// Overlap says what happens when a job's slot is due while an earlier run of it still runs
// (the runner's overlap package applies it).
type Overlap string

// The overlap policies.
const (
	OverlapSkip    Overlap = "skip"    // record the new slot skipped
	OverlapQueue   Overlap = "queue"   // run the new slot after the current run
	OverlapReplace Overlap = "replace" // cancel the current run, then run the new slot
	OverlapAllow   Overlap = "allow"   // run both at once
)

// Misfire says what a new leader does with slots that were due within the catch-up window but
// never ran (or were left running by an older leader); the runner's catchup package applies it.
type Misfire string

// The misfire policies.
const (
	MisfireSkip Misfire = "skip" // record them missed
	MisfireOnce Misfire = "once" // run the latest, record the rest missed
	MisfireAll  Misfire = "all"  // run them all, oldest first, one after another
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

// FireAt is when slot fires: the slot plus its deterministic jitter.
func (s *Spec) FireAt(slot time.Time) time.Time {
	return slot.Add(schedule.Jitter(s.Name, slot, s.Jitter))
}

// Validate checks what the runner relies on; the configuration layer reports user errors.
func (s *Spec) Validate() error {
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

// SameTiming reports whether a and b fire at the same instants: a reload keeps the job's entry.
func SameTiming(a, b *Spec) bool {
	return a.Schedule.String() == b.Schedule.String() &&
		a.Schedule.Location().String() == b.Schedule.Location().String() &&
		a.Jitter == b.Jitter && a.Enabled == b.Enabled
}
