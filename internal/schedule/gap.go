package schedule

import "time"

// GapSpan is how far ahead ShortestGap looks at a cron schedule's slots.
const GapSpan = 366 * 24 * time.Hour

// GapSlots bounds how many slots ShortestGap looks at, so that checking a large table stays
// quick: a frequent schedule repeats its pattern of gaps every minute, hour or day, long before
// a year of its slots has passed.
const GapSlots = 1000

// ShortestGap returns the shortest time between two consecutive slots after from: exactly the
// period for @every; for a cron schedule, the shortest over the slots of the next GapSpan, at
// most GapSlots of them; when fewer than two slots fall in that span, the shortest of the next
// few gaps however long (a yearly schedule's: 365 days whatever the date), at most GapSpan. ok is
// false only for a schedule that never fires.
//
// A jitter window must be shorter than this gap, or a slot's delayed firing could pass the next
// slot, or with a window far longer than the schedule, never come.
func (s *Schedule) ShortestGap(from time.Time) (gap time.Duration, ok bool) {
	if s.kind == kindEvery {
		return time.Duration(s.every) * time.Second, true
	}
	end := from.Add(GapSpan)
	prev := s.Next(from)
	if prev.At.IsZero() {
		return 0, false
	} else if prev.At.After(end) {
		return s.sparseGap(prev), true
	}
	for range GapSlots - 1 {
		next := s.Next(prev.At)
		if next.At.IsZero() || next.At.After(end) {
			break
		}
		if d := next.At.Sub(prev.At); !ok || d < gap {
			gap, ok = d, true
		}
		prev = next
	}
	if !ok {
		return s.sparseGap(prev), true
	}
	return gap, ok
}

// sparseGap is the gap of a schedule with fewer than two slots a year: the shortest of the four
// gaps after from, at most GapSpan (a leap day's four years count as GapSpan).
func (s *Schedule) sparseGap(from Slot) time.Duration {
	gap := GapSpan
	for range 4 {
		next := s.Next(from.At)
		if next.At.IsZero() {
			break
		}
		gap, from = min(gap, next.At.Sub(from.At)), next
	}
	return gap
}
