package schedule

import (
	"math/bits"
	"time"
)

// Wall-clock readings are handled as "wall seconds": the seconds from 1970-01-01 00:00:00 to the
// reading, counted as if the zone had no offset changes (the reading of instant t is
// t.Unix() + its UTC offset). Matching the fields against wall seconds is pure calendar arithmetic;
// the zone only enters when a reading is turned into an instant (dst.go).

const secondsPerDay = 86400

// nextMatch returns the first wall second at or after from whose reading matches the fields, and
// false if there is none before the year maxYear ends.
func (s *Schedule) nextMatch(from int64, maxYear int) (int64, bool) {
	days := floorDiv(from, secondsPerDay)
	sod := int(from - days*secondsPerDay)
	y, m, d := civilFromDays(days)
	h, mi, sec := sod/3600, sod/60%60, sod%60
	for y <= maxYear {
		if s.month&(1<<m) == 0 {
			nm := nextBit(s.month, m+1)
			if nm < 0 {
				y++
				nm = nextBit(s.month, 1)
			}
			m, d, h, mi, sec = nm, 1, 0, 0, 0
			continue
		}
		if d > daysIn(y, m) {
			m, d, h, mi, sec = m+1, 1, 0, 0, 0
			if m > 12 {
				y, m = y+1, 1
			}
			continue
		}
		if !s.dayMatches(y, m, d) {
			next := d + 1
			if s.domStar || s.dowStar {
				// Both day fields must match, so only days in the day-of-month set can.
				if next = nextBit(s.dom, d+1); next < 0 {
					next = 32
				}
			}
			d, h, mi, sec = next, 0, 0, 0
			continue
		}
		nh := nextBit(s.hour, h)
		if nh < 0 {
			d, h, mi, sec = d+1, 0, 0, 0
			continue
		}
		if nh != h {
			h, mi, sec = nh, 0, 0
		}
		nmi := nextBit(s.minute, mi)
		if nmi < 0 {
			h, mi, sec = h+1, 0, 0
			continue
		}
		if nmi != mi {
			mi, sec = nmi, 0
		}
		ns := nextBit(s.second, sec)
		if ns < 0 {
			mi, sec = mi+1, 0
			continue
		}
		return daysFromCivil(y, m, d)*secondsPerDay + int64(h*3600+mi*60+ns), true
	}
	return 0, false
}

// dayMatches applies the day-of-month and day-of-week fields the way robfig/cron and cron(8) do:
// both must match when either is `*`, otherwise either may.
func (s *Schedule) dayMatches(y, m, d int) bool {
	domOK := s.dom&(1<<d) != 0
	dowOK := s.dow&(1<<weekday(daysFromCivil(y, m, d))) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// nextBit returns the lowest set bit of mask at or above from, or -1.
func nextBit(mask uint64, from int) int {
	if from > 63 {
		return -1
	}
	mask &= ^uint64(0) << from
	if mask == 0 {
		return -1
	}
	return bits.TrailingZeros64(mask)
}

// wallTimeFromSeconds splits wall seconds into a reading.
func wallTimeFromSeconds(w int64) WallTime {
	days := floorDiv(w, secondsPerDay)
	sod := int(w - days*secondsPerDay)
	y, m, d := civilFromDays(days)
	return WallTime{Year: y, Month: time.Month(m), Day: d, Hour: sod / 3600, Minute: sod / 60 % 60, Second: sod % 60}
}

// daysFromCivil returns the days from 1970-01-01 to the proleptic Gregorian date y-m-d
// (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(int64(y), 400)
	yoe := int64(y) - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	m = int(mp + 3)
	if m > 12 {
		m -= 12
	}
	y = int(yoe + era*400)
	if m <= 2 {
		y++
	}
	return y, m, d
}

// weekday returns the day of the week, 0 for Sunday, of a day counted from 1970-01-01 (a Thursday).
func weekday(days int64) int {
	w := (days + 4) % 7
	if w < 0 {
		w += 7
	}
	return int(w)
}

func daysIn(y, m int) int {
	if m == 2 && !isLeap(y) {
		return 28
	}
	return maxDaysIn(m)
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }
