package schedule

import (
	"errors"
	"fmt"
	"time"
)

// MaxBetween is the most slots Between returns: a day and a quarter of a one-second schedule. It
// bounds catch-up; a window holding more is an error, not a silently shortened list.
const MaxBetween = 100_000

// ErrTooManySlots is returned by Between when a window holds more than MaxBetween slots.
var ErrTooManySlots = errors.New("too many slots")

// searchYears bounds the search for the next slot. Parse rejects specs that never fire and
// the rarest that do (the 29th of February) fire at least every eight years.
const searchYears = 10

// kind says which clock a schedule follows; see the package documentation.
type kind uint8

const (
	kindWall  kind = iota // fixed second, minute and hour: the wall clock, with the DST policy
	kindReal              // a wildcard second, minute or hour: every real instant that matches
	kindEvery             // @every: multiples of a period since the Unix epoch
)

// Schedule is a parsed schedule in one time zone, made by Parse. It is immutable and safe
// for concurrent use.
// Its methods depend only on their arguments, so every replica computes the same slots.
type Schedule struct {
	spec  string
	loc   *time.Location
	kind  kind
	every int64 // seconds, for kindEvery

	// Bit sets from robfig/cron, bit v set when value v matches, without robfig's star bit.
	second, minute, hour, dom, month, dow uint64
	domStar, dowStar                      bool // day-of-month or day-of-week is `*`/`?`
}

// Slot is one firing of a schedule.
type Slot struct {
	// At is the instant the slot fires, in the schedule's location.
	At time.Time
	// Nominal is the wall-clock time the schedule named. It differs from At's reading only when
	// Adjusted; for @every it is At's reading.
	Nominal WallTime
	// Adjusted is true when the DST policy moved the slot: its nominal time fell in wall-clock time
	// skipped by a jump forward, so it fires at the first instant after the jump.
	Adjusted bool
}

// WallTime is a wall-clock reading: a date and a time of day, without a zone. Unlike a time.Time
// it can name a time that does not exist in a zone, such as 02:30 on a spring-forward day.
type WallTime struct {
	Year                 int
	Month                time.Month
	Day                  int
	Hour, Minute, Second int
}

// String formats w as "2006-01-02 15:04:05".
func (w WallTime) String() string {
	return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", w.Year, int(w.Month), w.Day, w.Hour, w.Minute, w.Second)
}

// String returns the spec, its words separated by single spaces.
func (s *Schedule) String() string { return s.spec }

// Location returns the zone the schedule's wall-clock fields are read in.
func (s *Schedule) Location() *time.Location { return s.loc }

// WallClock reports whether the schedule follows the wall clock (fixed second, minute and hour,
// adjusted across DST changes) rather than real time (a wildcard in one of them, or @every).
func (s *Schedule) WallClock() bool { return s.kind == kindWall }

// Next returns the first slot strictly after after. It does not allocate. It returns the zero Slot
// only when no slot falls within ten years, which a schedule accepted by Parse reaches only
// if every wall-clock time it names within that span is skipped by DST jumps.
func (s *Schedule) Next(after time.Time) Slot {
	switch s.kind {
	case kindEvery:
		return s.nextEvery(after)
	case kindReal:
		t, ok := s.nextReal(after.Unix() + 1)
		if !ok {
			return Slot{}
		}
		at := time.Unix(t, 0).In(s.loc)
		return Slot{At: at, Nominal: wallTimeOf(at)}
	default:
		return s.nextWallClock(after)
	}
}

// nextEvery returns the next multiple of the period since the epoch.
func (s *Schedule) nextEvery(after time.Time) Slot {
	u := after.Unix()
	k := floorDiv(u, s.every) + 1
	if k > maxUnix/s.every {
		return Slot{}
	}
	at := time.Unix(k*s.every, 0).In(s.loc)
	return Slot{At: at, Nominal: wallTimeOf(at)}
}

// maxUnix keeps Unix seconds far from overflow in every computation of this package.
const maxUnix = 1 << 60

// Slots returns the next n slots after after, fewer if the schedule stops within the search span.
func (s *Schedule) Slots(after time.Time, n int) []Slot {
	if n <= 0 {
		return nil
	}
	out := make([]Slot, 0, min(n, MaxBetween))
	for len(out) < n {
		sl := s.Next(after)
		if sl.At.IsZero() {
			break
		}
		out = append(out, sl)
		after = sl.At
	}
	return out
}

// Between returns the slots in (from, to], oldest first, for catch-up after an outage. It returns an
// error wrapping ErrTooManySlots, and no slots, when there are more than MaxBetween.
func (s *Schedule) Between(from, to time.Time) ([]Slot, error) {
	if !to.After(from) {
		return nil, nil
	}
	if s.kind == kindEvery {
		if n := floorDiv(to.Unix(), s.every) - floorDiv(from.Unix(), s.every); n > MaxBetween {
			return nil, fmt.Errorf("slots of %q in (%s, %s]: %d, more than %d: %w", s.spec, from.Format(time.RFC3339), to.Format(time.RFC3339), n, MaxBetween, ErrTooManySlots)
		}
	}
	var out []Slot
	for after := from; ; {
		sl := s.Next(after)
		if sl.At.IsZero() || sl.At.After(to) {
			return out, nil
		}
		if len(out) == MaxBetween {
			return nil, fmt.Errorf("slots of %q in (%s, %s]: more than %d: %w", s.spec, from.Format(time.RFC3339), to.Format(time.RFC3339), MaxBetween, ErrTooManySlots)
		}
		out = append(out, sl)
		after = sl.At
	}
}

// Last returns the latest slot in (from, to] and whether there is one, without building the list:
// what a "run once" catch-up needs however long the window is. It takes time proportional to the
// number of slots in the window, except for @every, where it is constant.
func (s *Schedule) Last(from, to time.Time) (Slot, bool) {
	if !to.After(from) {
		return Slot{}, false
	}
	if s.kind == kindEvery {
		k := floorDiv(to.Unix(), s.every)
		at := time.Unix(k*s.every, 0).In(s.loc)
		if !at.After(from) {
			return Slot{}, false
		}
		return Slot{At: at, Nominal: wallTimeOf(at)}, true
	}
	var last Slot
	found := false
	for after := from; ; {
		sl := s.Next(after)
		if sl.At.IsZero() || sl.At.After(to) {
			return last, found
		}
		last, found = sl, true
		after = sl.At
	}
}

// wallTimeOf reads t's wall clock.
func wallTimeOf(t time.Time) WallTime {
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	return WallTime{y, mo, d, h, mi, sec}
}

// floorDiv divides rounding towards negative infinity; b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
