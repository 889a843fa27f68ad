package schedule

import (
	"fmt"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // zone rules even where the system has none

	"github.com/robfig/cron/v3"
)

// dstZones are the zones of the DST tables: both hemispheres, a 30-minute shift (Lord_Howe), a jump
// at midnight (Santiago), and zones without DST.
var dstZones = []string{
	"America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Australia/Sydney",
	"America/Santiago", "Asia/Kolkata", "UTC",
}

var dstYears = []int{2024, 2025, 2026, 2027}

func TestSchedule_NextAcrossDST(t *testing.T) {
	tests := []struct {
		name, zone, spec, from string
		want                   []string // At in RFC 3339, then " from <nominal>" when adjusted
	}{
		{"NewYorkSpringSkippedRunsAtJump", "America/New_York", "30 2 * * *", "2024-03-09T00:00:00-05:00", []string{
			"2024-03-09T02:30:00-05:00", "2024-03-10T03:00:00-04:00 from 2024-03-10 02:30:00", "2024-03-11T02:30:00-04:00"}},
		{"NewYorkFallRepeatedRunsOnce", "America/New_York", "30 1 * * *", "2024-11-02T00:00:00-04:00", []string{
			"2024-11-02T01:30:00-04:00", "2024-11-03T01:30:00-04:00", "2024-11-04T01:30:00-05:00"}},
		{"NewYorkFallFromSecondOccurrence", "America/New_York", "30 1 * * *", "2024-11-03T01:10:00-05:00", []string{
			"2024-11-04T01:30:00-05:00"}},
		{"NewYorkFallFromFirstOccurrence", "America/New_York", "30 1 * * *", "2024-11-03T01:10:00-04:00", []string{
			"2024-11-03T01:30:00-04:00", "2024-11-04T01:30:00-05:00"}},
		{"NewYorkFallHourlyFollowsRealTime", "America/New_York", "0 * * * *", "2024-11-03T00:30:00-04:00", []string{
			"2024-11-03T01:00:00-04:00", "2024-11-03T01:00:00-05:00", "2024-11-03T02:00:00-05:00"}},
		{"NewYorkSpringHourlyFollowsRealTime", "America/New_York", "@hourly", "2024-03-10T00:30:00-05:00", []string{
			"2024-03-10T01:00:00-05:00", "2024-03-10T03:00:00-04:00", "2024-03-10T04:00:00-04:00"}},
		{"NewYorkFallQuarterHours", "America/New_York", "*/30 * * * *", "2024-11-03T00:45:00-04:00", []string{
			"2024-11-03T01:00:00-04:00", "2024-11-03T01:30:00-04:00", "2024-11-03T01:00:00-05:00",
			"2024-11-03T01:30:00-05:00", "2024-11-03T02:00:00-05:00"}},
		{"NewYorkSpringWildMinuteFixedHourSkips", "America/New_York", "*/20 2 * * *", "2024-03-09T02:50:00-05:00", []string{
			"2024-03-11T02:00:00-04:00"}},
		{"NewYorkSpringSkippedReadingsShareOneSlot", "America/New_York", "0,30 2 * * *", "2024-03-09T02:10:00-05:00", []string{
			"2024-03-09T02:30:00-05:00", "2024-03-10T03:00:00-04:00 from 2024-03-10 02:00:00", "2024-03-11T02:00:00-04:00"}},
		{"NewYorkSpringRangeCollapsesIntoJump", "America/New_York", "0 1-3 * * *", "2024-03-10T00:30:00-05:00", []string{
			"2024-03-10T01:00:00-05:00", "2024-03-10T03:00:00-04:00 from 2024-03-10 02:00:00", "2024-03-11T01:00:00-04:00"}},
		{"NewYorkFallRangeSkipsRepeat", "America/New_York", "0 1-3 * * *", "2024-11-03T00:30:00-04:00", []string{
			"2024-11-03T01:00:00-04:00", "2024-11-03T02:00:00-05:00", "2024-11-03T03:00:00-05:00"}},
		{"NewYorkFallRangeFromSecondOccurrence", "America/New_York", "0 1-3 * * *", "2024-11-03T01:10:00-05:00", []string{
			"2024-11-03T02:00:00-05:00"}},
		{"NewYorkSpringSeconds", "America/New_York", "15 30 2 * * *", "2024-03-10T00:00:00-05:00", []string{
			"2024-03-10T03:00:00-04:00 from 2024-03-10 02:30:15", "2024-03-11T02:30:15-04:00"}},
		{"NewYorkSpringFromJumpInstant", "America/New_York", "30 2 * * *", "2024-03-10T03:00:00-04:00", []string{
			"2024-03-11T02:30:00-04:00"}},
		{"BerlinSpring", "Europe/Berlin", "30 2 * * *", "2025-03-29T00:00:00+01:00", []string{
			"2025-03-29T02:30:00+01:00", "2025-03-30T03:00:00+02:00 from 2025-03-30 02:30:00", "2025-03-31T02:30:00+02:00"}},
		{"BerlinFall", "Europe/Berlin", "30 2 * * *", "2025-10-25T00:00:00+02:00", []string{
			"2025-10-25T02:30:00+02:00", "2025-10-26T02:30:00+02:00", "2025-10-27T02:30:00+01:00"}},
		{"LordHoweSpringHalfHourJump", "Australia/Lord_Howe", "15 2 * * *", "2024-10-05T00:00:00+10:30", []string{
			"2024-10-05T02:15:00+10:30", "2024-10-06T02:30:00+11:00 from 2024-10-06 02:15:00", "2024-10-07T02:15:00+11:00"}},
		{"LordHoweSpringUnskippedHalf", "Australia/Lord_Howe", "45 2 * * *", "2024-10-05T12:00:00+10:30", []string{
			"2024-10-06T02:45:00+11:00"}},
		{"LordHoweFallHalfHourRepeat", "Australia/Lord_Howe", "45 1 * * *", "2025-04-05T00:00:00+11:00", []string{
			"2025-04-05T01:45:00+11:00", "2025-04-06T01:45:00+11:00", "2025-04-07T01:45:00+10:30"}},
		{"LordHoweFallHourlyAtHalfPast", "Australia/Lord_Howe", "30 * * * *", "2025-04-06T00:00:00+11:00", []string{
			"2025-04-06T00:30:00+11:00", "2025-04-06T01:30:00+11:00", "2025-04-06T01:30:00+10:30", "2025-04-06T02:30:00+10:30"}},
		{"LordHoweFallHourlyOnTheHour", "Australia/Lord_Howe", "0 * * * *", "2025-04-06T00:30:00+11:00", []string{
			"2025-04-06T01:00:00+11:00", "2025-04-06T02:00:00+10:30"}},
		// robfig/cron's Next returns 02:30 here, missing 02:00-02:20 (+10:30), which exist.
		{"LordHoweFallWildMinute", "Australia/Lord_Howe", "*/10 2 * * *", "2024-04-06T12:00:00+11:00", []string{
			"2024-04-07T02:00:00+10:30", "2024-04-07T02:10:00+10:30", "2024-04-07T02:20:00+10:30", "2024-04-07T02:30:00+10:30"}},
		{"LordHoweSpringHourly", "Australia/Lord_Howe", "0 * * * *", "2024-10-06T00:30:00+10:30", []string{
			"2024-10-06T01:00:00+10:30", "2024-10-06T03:00:00+11:00"}},
		{"SydneySpring", "Australia/Sydney", "30 2 * * *", "2024-10-05T00:00:00+10:00", []string{
			"2024-10-05T02:30:00+10:00", "2024-10-06T03:00:00+11:00 from 2024-10-06 02:30:00", "2024-10-07T02:30:00+11:00"}},
		{"SydneyFall", "Australia/Sydney", "30 2 * * *", "2025-04-05T00:00:00+11:00", []string{
			"2025-04-05T02:30:00+11:00", "2025-04-06T02:30:00+11:00", "2025-04-07T02:30:00+10:00"}},
		{"SantiagoMidnightSkipped", "America/Santiago", "@daily", "2024-09-06T12:00:00-04:00", []string{
			"2024-09-07T00:00:00-04:00", "2024-09-08T01:00:00-03:00 from 2024-09-08 00:00:00", "2024-09-09T00:00:00-03:00"}},
		{"SantiagoLateEveningRepeated", "America/Santiago", "30 23 * * *", "2024-04-05T12:00:00-03:00", []string{
			"2024-04-05T23:30:00-03:00", "2024-04-06T23:30:00-03:00", "2024-04-07T23:30:00-04:00"}},
		{"KolkataNoDST", "Asia/Kolkata", "30 2 * * *", "2024-03-09T00:00:00+05:30", []string{
			"2024-03-09T02:30:00+05:30", "2024-03-10T02:30:00+05:30"}},
		{"ApiaSkippedDay", "Pacific/Apia", "0 12 * * *", "2011-12-28T13:00:00-10:00", []string{
			"2011-12-29T12:00:00-10:00", "2011-12-31T00:00:00+14:00 from 2011-12-30 12:00:00", "2011-12-31T12:00:00+14:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.spec, mustZone(t, tt.zone))
			got := formatSlots(s.Slots(mustTime(t, tt.from), len(tt.want)))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("%s in %s after %s:\n got %s\nwant %s", tt.spec, tt.zone, tt.from,
					strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
			}
		})
	}
}

// TestSchedule_ReadingBound checks the highest reading reached so far, which lets Next skip the
// repeated readings of a fall-back in one step instead of trying each.
func TestSchedule_ReadingBound(t *testing.T) {
	tests := []struct{ zone, at, want string }{
		{"America/New_York", "2024-11-03T00:59:59-04:00", "2024-11-03 01:00:00"},
		{"America/New_York", "2024-11-03T01:10:00-04:00", "2024-11-03 01:10:01"},
		{"America/New_York", "2024-11-03T01:10:00-05:00", "2024-11-03 02:00:00"},
		{"America/New_York", "2024-11-03T02:00:00-05:00", "2024-11-03 02:00:01"},
		{"America/New_York", "2024-03-10T03:00:00-04:00", "2024-03-10 03:00:01"},
		{"Australia/Lord_Howe", "2025-04-06T01:45:00+10:30", "2025-04-06 02:00:00"},
		{"America/Santiago", "2024-04-06T23:15:00-04:00", "2024-04-07 00:00:00"},
		{"Asia/Kolkata", "2024-11-03T01:10:00+05:30", "2024-11-03 01:10:01"},
	}
	for _, tt := range tests {
		s := mustParse(t, "0 2 * * *", mustZone(t, tt.zone))
		if got := wallTimeFromSeconds(s.readingBound(mustTime(t, tt.at).Unix())).String(); got != tt.want {
			t.Errorf("%s at %s: bound %s, want %s", tt.zone, tt.at, got, tt.want)
		}
	}
}

// TestSchedule_OneSlotPerLocalDay is the acceptance check of `scheduler next`: a daily
// fixed-hour schedule has exactly one slot per local day across every transition.
func TestSchedule_OneSlotPerLocalDay(t *testing.T) {
	var specs []string
	for m := 0; m < 4*60; m += 15 {
		specs = append(specs, fmt.Sprintf("%d %d * * *", m%60, m/60))
	}
	specs = append(specs, "0 12 * * *", "30 23 * * *", "45 23 * * *", "@daily")
	for _, zone := range dstZones {
		loc := mustZone(t, zone)
		for _, year := range dstYears {
			days := transitionDays(loc, year)
			if len(days) == 0 {
				days = []time.Time{time.Date(year, 3, 15, 0, 0, 0, 0, loc), time.Date(year, 10, 15, 0, 0, 0, 0, loc)}
			}
			for _, day := range days {
				for _, spec := range specs {
					s := mustParse(t, spec, loc)
					from := time.Date(day.Year(), day.Month(), day.Day()-3, 23, 59, 59, 0, loc)
					slots := s.Slots(from, 6)
					for i, sl := range slots {
						want := time.Date(day.Year(), day.Month(), day.Day()-2+i, 12, 0, 0, 0, loc)
						if y, m, d := sl.At.Date(); y != want.Year() || m != want.Month() || d != want.Day() {
							t.Fatalf("%s in %s around %s: slot %d at %s, want on %s (slots %v)",
								spec, zone, day.Format(time.DateOnly), i, sl.At, want.Format(time.DateOnly), formatSlots(slots))
						}
						if sl.Nominal.Year != want.Year() || sl.Nominal.Month != want.Month() || sl.Nominal.Day != want.Day() {
							t.Fatalf("%s in %s: slot %d nominal %s, want on %s", spec, zone, i, sl.Nominal, want.Format(time.DateOnly))
						}
						if sl.Adjusted != (wallTimeOf(sl.At) != sl.Nominal) {
							t.Fatalf("%s in %s: slot %v: Adjusted disagrees with its readings", spec, zone, sl)
						}
					}
				}
			}
		}
	}
}

// TestSchedule_MatchesReference compares Slots with a brute-force walk of real time, minute by
// minute, that states the policy directly: a real-time schedule fires at each instant whose reading
// matches; a wall-clock schedule fires at the first instant whose reading reaches a matching reading
// it has not reached before.
func TestSchedule_MatchesReference(t *testing.T) {
	specs := []string{
		"30 2 * * *", "0 2 * * *", "45 1 * * *", "0 0 * * *", "30 23 * * *", "0 1-3 * * *",
		"0,30 1,2 * * *", "15 0-23/2 * * *", "0 3 * * 0", "*/7 2-3 * * *",
		"0 * * * *", "30 * * * *", "*/15 * * * *", "*/10 2 * * *", "* * * * *", "5 */2 * * *",
	}
	for _, zone := range dstZones {
		loc := mustZone(t, zone)
		for _, year := range dstYears {
			for _, day := range transitionDays(loc, year) {
				from := time.Date(day.Year(), day.Month(), day.Day()-2, 12, 0, 0, 0, loc)
				to := from.Add(96 * time.Hour)
				line := newTimeline(from, to)
				for _, spec := range specs {
					s := mustParse(t, spec, loc)
					got, err := s.Between(from, to)
					if err != nil {
						t.Fatal(err)
					}
					want := line.referenceSlots(s)
					if g, w := strings.Join(formatSlots(got), "\n"), strings.Join(formatSlots(want), "\n"); g != w {
						t.Fatalf("%s in %s around %s: slots differ from the reference\n got %s\nwant %s",
							spec, zone, day.Format(time.DateOnly), g, w)
					}
				}
			}
		}
	}
}

// TestSchedule_RealTimeAgreesWithRobfig checks that a real-time schedule is what robfig/cron's own
// Next computes in zones that shift by whole hours: the policy only changes wall-clock schedules.
// (On Lord_Howe's half-hour fall-back robfig's Next is wrong; see LordHoweFallWildMinute.)
func TestSchedule_RealTimeAgreesWithRobfig(t *testing.T) {
	specs := []string{"0 * * * *", "30 * * * *", "*/15 * * * *", "*/10 2 * * *", "5 */2 * * *", "@hourly"}
	p := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	for _, zone := range []string{"America/New_York", "Europe/Berlin", "Australia/Sydney", "America/Santiago"} {
		loc := mustZone(t, zone)
		for _, year := range dstYears {
			for _, day := range transitionDays(loc, year) {
				for _, spec := range specs {
					s := mustParse(t, spec, loc)
					rs, err := p.Parse(spec)
					if err != nil {
						t.Fatal(err)
					}
					rs.(*cron.SpecSchedule).Location = loc
					after := time.Date(day.Year(), day.Month(), day.Day()-1, 12, 0, 0, 0, loc)
					for i := 0; i < 60; i++ {
						want := rs.Next(after)
						got := s.Next(after)
						if !got.At.Equal(want) || got.Adjusted {
							t.Fatalf("%s in %s after %s: got %v, robfig %s", spec, zone, after, got, want)
						}
						after = want
					}
				}
			}
		}
	}
}

// timeline holds each minute of a window and the wall-clock reading at it, the reading as a UTC
// time so that readings compare and step without a zone.
type timeline struct {
	start   time.Time // the reading at the window's start, not itself a candidate
	at      []time.Time
	reading []time.Time
}

// newTimeline walks (from, to] a minute at a time. from must not lie in a repeated span.
func newTimeline(from, to time.Time) timeline {
	reading := func(t time.Time) time.Time {
		y, mo, d := t.Date()
		h, mi, sec := t.Clock()
		return time.Date(y, mo, d, h, mi, sec, 0, time.UTC)
	}
	l := timeline{start: reading(from)}
	for t := from.Add(time.Minute); !t.After(to); t = t.Add(time.Minute) {
		l.at = append(l.at, t)
		l.reading = append(l.reading, reading(t))
	}
	return l
}

// referenceSlots computes the slots of a five-field schedule in the window from the policy's
// definition.
func (l timeline) referenceSlots(s *Schedule) []Slot {
	matches := func(r time.Time) bool {
		if s.minute&(1<<r.Minute()) == 0 || s.hour&(1<<r.Hour()) == 0 || s.month&(1<<int(r.Month())) == 0 {
			return false
		}
		dom, dow := s.dom&(1<<r.Day()) != 0, s.dow&(1<<int(r.Weekday())) != 0
		if s.domStar || s.dowStar {
			return dom && dow
		}
		return dom || dow
	}
	var out []Slot
	high := l.start // the highest reading reached so far
	for i, t := range l.at {
		r := l.reading[i]
		switch {
		case !s.WallClock():
			if matches(r) {
				out = append(out, Slot{At: t, Nominal: wallTimeOf(r)})
			}
		case r.After(high):
			for c := high.Add(time.Minute); !c.After(r); c = c.Add(time.Minute) {
				if matches(c) {
					out = append(out, Slot{At: t, Nominal: wallTimeOf(c), Adjusted: !c.Equal(r)})
					break
				}
			}
			high = r
		}
	}
	return out
}

// transitionDays returns the local days of year on which loc's offset changes.
func transitionDays(loc *time.Location, year int) []time.Time {
	var days []time.Time
	t := time.Date(year, 1, 1, 0, 0, 0, 0, loc)
	end := time.Date(year+1, 1, 1, 0, 0, 0, 0, loc)
	for {
		_, next := t.ZoneBounds()
		if next.IsZero() || !next.Before(end) {
			return days
		}
		_, before := next.Add(-time.Second).Zone()
		if _, after := next.Zone(); after != before {
			days = append(days, next)
		}
		t = next
	}
}

func formatSlots(slots []Slot) []string {
	out := make([]string, len(slots))
	for i, sl := range slots {
		out[i] = sl.At.Format(time.RFC3339)
		if sl.Adjusted {
			out[i] += " from " + sl.Nominal.String()
		}
	}
	return out
}

func mustZone(tb testing.TB, name string) *time.Location {
	tb.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		tb.Fatalf("load zone %s: %v", name, err)
	}
	return loc
}

func mustParse(tb testing.TB, spec string, loc *time.Location) *Schedule {
	tb.Helper()
	s, err := Parse(spec, loc)
	if err != nil {
		tb.Fatalf("Parse(%q): %v", spec, err)
	}
	return s
}

func mustTime(tb testing.TB, s string) time.Time {
	tb.Helper()
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		tb.Fatalf("parse time %q: %v", s, err)
	}
	return t
}
