package backfills

import (
	"context"
	"errors"
	"fmt"
	"time"

	"scheduler/internal/backfill"
	"scheduler/internal/control"
	"scheduler/internal/jobs"
	"scheduler/internal/schedule"
)

// MaxUnconfirmed is the most slots a backfill requests without --yes.
const MaxUnconfirmed = 100

// State is the part of the operations state that holds backfill requests (*control.Store in
// etcd, *control.Postgres in the store).
type State interface {
	SubmitBackfill(ctx context.Context, b control.Backfill) (control.Backfill, error)
	Backfills(ctx context.Context) ([]control.Backfill, error)
	Backfill(ctx context.Context, job string, id int64) (control.Backfill, bool, error)
	UpdateBackfill(ctx context.Context, b control.Backfill) error
}

var (
	_ State = (*control.Store)(nil)
	_ State = (*control.Postgres)(nil)
)

// Of returns the backfill requests of the operations state c: both of its implementations keep
// them.
func Of(c any) (State, error) {
	b, ok := c.(State)
	if !ok {
		return nil, fmt.Errorf("the operations state %T keeps no backfill requests", c)
	}
	return b, nil
}

// Earliest is the earliest time a backfill's range may start at: no ledger holds a slot before
// it, and the schedule's search has no slot to answer before the year 1 begins.
var Earliest = time.Unix(0, 0).UTC()

// Slots returns the slots of sch in [from, to], oldest first, as the ledger keeps them.
func Slots(sch *schedule.Schedule, from, to time.Time) ([]time.Time, error) {
	switch {
	case to.Before(from):
		return nil, fmt.Errorf("--from %s is after --to %s", stamp(from), stamp(to))
	case from.Before(Earliest):
		return nil, earliestError(from)
	}
	slots, err := sch.Between(from.Add(-time.Nanosecond), to)
	if err != nil {
		if errors.Is(err, schedule.ErrTooManySlots) {
			return nil, fmt.Errorf("more than %d slots: backfill a shorter range at a time", schedule.MaxBetween)
		}
		return nil, err
	}
	out := make([]time.Time, len(slots))
	for i, sl := range slots {
		out[i] = sl.At.UTC().Truncate(time.Microsecond)
	}
	return out, nil
}

// Overlap is the overlap a request's slots follow: the one asked for, else the job's, with
// replace as queue (a backfill cancels no run).
func Overlap(asked string, job jobs.Overlap) (backfill.Overlap, error) {
	o := backfill.Overlap(asked)
	if asked == "" {
		o = backfill.Overlap(job)
		if job == jobs.OverlapReplace {
			o = backfill.OverlapQueue
		}
	}
	if !o.Valid() {
		return "", fmt.Errorf("overlap %q: want skip, queue or allow", asked)
	}
	return o, nil
}

// ParseRange parses --from and --to in loc, each an RFC 3339 time or a date (a date as --to is
// the whole day), and checks the range against now: from <= to <= now.
func ParseRange(fromArg, toArg string, loc *time.Location, now time.Time) (from, to time.Time, err error) {
	if fromArg == "" || toArg == "" {
		return from, to, errors.New("--from and --to are required")
	}
	if from, _, err = parseTime("--from", fromArg, loc); err != nil {
		return from, to, err
	}
	to, day, err := parseTime("--to", toArg, loc)
	if err != nil {
		return from, to, err
	}
	if day { // the day's last instant: just before the next day starts
		d, _ := time.Parse(time.DateOnly, toArg)
		y, m, dd := d.AddDate(0, 0, 1).Date()
		to = schedule.DayStart(y, m, dd, loc).Add(-time.Microsecond)
	}
	switch {
	case from.Before(Earliest):
		return from, to, earliestError(from)
	case from.After(to):
		return from, to, fmt.Errorf("--from %s is after --to %s", stamp(from), stamp(to))
	case to.After(now):
		return from, to, fmt.Errorf("--to %s is in the future: a backfill runs past slots only (the schedule runs the others)", stamp(to))
	}
	return from, to, nil
}

// CheckRetention refuses a backfill the job's retention does not admit: slots older than
// maxAge, whose runs would be pruned as soon as they are written (a pruned run of a request is
// one its next leader would run again), or more slots than maxRuns, the most one request adds to
// the ledger, where backfilled runs stay until maxAge (0: no limit, for both).
func CheckRetention(slots []time.Time, maxAge time.Duration, maxRuns int, now time.Time) error {
	switch {
	case len(slots) == 0:
		return nil
	case maxAge > 0 && slots[0].Before(now.Add(-maxAge)):
		return fmt.Errorf("the slot %s is older than the job's history.max_age (%s): its run would be pruned at once; raise history.max_age for the backfill",
			stamp(slots[0]), maxAge)
	case maxRuns > 0 && len(slots) > maxRuns:
		return fmt.Errorf("%d slots are more than the job's history.max_runs (%d), the most runs one backfill adds to the ledger (backfilled runs are kept until history.max_age); backfill fewer at a time, or raise history.max_runs",
			len(slots), maxRuns)
	}
	return nil
}

// parseTime parses an RFC 3339 time, or a date at midnight in loc (day true).
func parseTime(flag, s string, loc *time.Location) (t time.Time, day bool, err error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, false, nil
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil { // its first instant, DST or not
		return schedule.DayStart(d.Year(), d.Month(), d.Day(), loc), true, nil
	}
	return time.Time{}, false, fmt.Errorf("%s %q: want an RFC 3339 time (2026-03-29T02:00:00Z) or a date (2026-03-29) in the job's zone", flag, s)
}

// earliestError refuses a range that starts before Earliest.
func earliestError(from time.Time) error {
	return fmt.Errorf("--from %s is before %s: a backfill runs slots from then on", stamp(from), stamp(Earliest))
}

// stamp formats a time for messages.
func stamp(t time.Time) string { return t.Format(time.RFC3339) }
