package schedule

import "time"

// DayStart returns the first instant of the day y-m-d in loc: its midnight (the first, where a
// change back repeats it) or, where a DST change skips midnight (America/Santiago,
// America/Havana), the instant the day's clock starts at; for a day the zone skips whole
// (Pacific/Apia, 30 December 2011), the start of the next day it has. time.Date leaves the instant of a skipped time unspecified (it may be the evening
// before).
func DayStart(y int, m time.Month, d int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	want := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	ty, tm, td := t.Date()
	switch got := time.Date(ty, tm, td, 0, 0, 0, 0, time.UTC); {
	case got.Before(want): // the evening before: the day starts where that zone period ends
		_, end := t.ZoneBounds()
		return end
	case got.After(want): // the day does not exist in loc: the next one's start
		return time.Date(ty, tm, td, 0, 0, 0, 0, loc)
	}
	// Where a change back repeats midnight (Asia/Amman), t may be the second one: the day began
	// at the first, in the offset before the change.
	if start, _ := t.ZoneBounds(); start.Equal(t) {
		before := t.Add(-time.Nanosecond)
		if by, bm, bd := before.Date(); by == y && bm == m && bd == d {
			_, off := before.Zone()
			return time.Date(y, m, d, 0, 0, 0, 0, time.FixedZone("", off)).In(loc)
		}
	}
	return t
}
