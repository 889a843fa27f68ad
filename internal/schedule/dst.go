package schedule

import (
	"math"
	"time"
)

// The DST policy, in terms of wall seconds (schedule_match.go) and zone periods (spans of real
// time with one UTC offset, as time.Time.ZoneBounds reports them).
//
// A wall-clock schedule names readings c. Its slot for c is f(c), the first instant whose reading is
// at least c: the instant c occurs at, its first occurrence if the clock went back over it, or the
// instant of the jump if the clock jumped forward over it. Readings that share an instant (several
// in one skipped span) make one slot, the earliest reading its nominal time.
//
// A real-time schedule fires at every instant whose reading matches: readings skipped by a jump do
// not fire, readings repeated by a jump back fire at each occurrence.

// zoneSpan bounds every UTC offset (tzdata's extremes, local mean times included, are about 16 h),
// so the instant of a reading is within zoneSpan of the reading taken as Unix seconds.
const zoneSpan = 26 * 3600

// zoneAt returns the UTC offset in seconds in effect at Unix second u, and the period [start, end)
// in which it applies; start is math.MinInt64 and end math.MaxInt64 when unbounded.
func zoneAt(loc *time.Location, u int64) (offset, start, end int64) {
	t := time.Unix(u, 0).In(loc)
	_, off := t.Zone()
	s, e := t.ZoneBounds()
	start, end = math.MinInt64, math.MaxInt64
	if !s.IsZero() {
		start = s.Unix()
	}
	if !e.IsZero() {
		end = e.Unix()
	}
	return int64(off), start, end
}

// nextWallClock is Next for a wall-clock schedule: the slot of the first matching reading c whose
// f(c) is later than after.
func (s *Schedule) nextWallClock(after time.Time) Slot {
	u := after.Unix()
	from := s.readingBound(u)
	maxYear := yearOfWallSeconds(from) + searchYears
	for {
		w, ok := s.nextMatch(from, maxYear)
		if !ok {
			return Slot{}
		}
		// readingBound makes t > u hold; the check keeps Next strictly increasing regardless.
		t, adjusted := s.instant(w)
		if t > u {
			return Slot{At: time.Unix(t, 0).In(s.loc), Nominal: wallTimeFromSeconds(w), Adjusted: adjusted}
		}
		from = w + 1
	}
}

// readingBound returns the least reading c such that f(c) lies after Unix second u (and after any
// instant within that second): one past the highest reading the clock has shown up to u. That is
// u's own reading, or, shortly after the clock went back, the reading just before the jump, so that
// a repeated reading does not fire twice.
func (s *Schedule) readingBound(u int64) int64 {
	off, start, _ := zoneAt(s.loc, u)
	bound := u + off + 1
	// An earlier period can only have shown higher readings if it ended within the largest possible
	// offset change, 2*zoneSpan, of u.
	for start != math.MinInt64 && u-start < 2*zoneSpan {
		prevOff, prevStart, _ := zoneAt(s.loc, start-1)
		// Before start the clock showed readings up to, not including, start+prevOff.
		bound = max(bound, start+prevOff)
		if prevStart >= start {
			break // periods always move back; this only guards the loop
		}
		start = prevStart
	}
	return bound
}

// instant returns f(w) and whether w was skipped by a jump forward (f(w) is then the instant of the
// jump). Periods are visited in order, from the one in effect zoneSpan before w (earlier than any
// instant that can read w); the first in which the clock reaches w holds f(w).
func (s *Schedule) instant(w int64) (int64, bool) {
	u := w - zoneSpan
	for {
		off, start, end := zoneAt(s.loc, u)
		t := w - off
		if t < end {
			if t >= start {
				return t, false
			}
			// The clock entered this period already past w.
			return start, true
		}
		if end <= u {
			return t, false // periods always move on; this only guards the loop
		}
		u = end
	}
}

// nextReal is Next for a real-time schedule: the first Unix second at or after u whose reading
// matches.
func (s *Schedule) nextReal(u int64) (int64, bool) {
	off, _, end := zoneAt(s.loc, u)
	maxYear := yearOfWallSeconds(u+off) + searchYears
	for {
		w, ok := s.nextMatch(u+off, maxYear)
		if !ok {
			return 0, false
		}
		if t := w - off; t < end {
			return t, true
		}
		// The match lies beyond this period's offset: look again from the next period's start.
		if end <= u {
			return 0, false // periods always move on; this only guards the loop
		}
		u = end
		off, _, end = zoneAt(s.loc, u)
	}
}

// yearOfWallSeconds returns the year of a reading.
func yearOfWallSeconds(w int64) int {
	y, _, _ := civilFromDays(floorDiv(w, secondsPerDay))
	return y
}
