package schedule

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseSchedule checks that no spec makes Parse panic, that its checks are at least as
// strict as robfig/cron's parser, and that an accepted schedule yields slots that are strictly
// increasing, match their fields, follow the DST policy and agree with robfig/cron in UTC.
func FuzzParseSchedule(f *testing.F) {
	for _, spec := range []string{
		"0 2 * * *", "30 2 * * *", "30 1 * * *", "*/15 * * * *", "0 */2 * * *", "0 1-3 * * *",
		"15 30 2 * * *", "*/10 * * * * *", "0 0 29 2 *", "0 0 30 2 *", "0 0 1,15 * mon", "5 4 ? jan-jun sun",
		"@daily", "@hourly", "@weekly", "@every 10s", "@every 90m", "@every 1.5s", "@sometimes",
		"CRON_TZ=UTC 0 2 * * *", "1,,2 * * * *", "*/0 * * * *", "5-2 * * * *", "0 0 * * 7", "",
	} {
		f.Add(spec, int64(1_710_050_000)) // 2024-03-10, spring forward in New York
		f.Add(spec, int64(1_730_612_000)) // 2024-11-03, fall back in New York
	}
	f.Add("45 1 * * *", int64(1_743_865_000)) // 2025-04-06, Lord_Howe's half-hour fall back
	f.Add("0 0 * * *", int64(1_725_760_000))  // 2024-09-08, Santiago's midnight jump
	zones := []*time.Location{
		mustZone(f, "UTC"), mustZone(f, "America/New_York"), mustZone(f, "Australia/Lord_Howe"), mustZone(f, "America/Santiago"),
	}
	f.Fuzz(func(t *testing.T, spec string, unix int64) {
		// Any instant from 1900 to 2200.
		const lo, span = -2_208_988_800, 9_467_107_200
		after := time.Unix(lo+((unix%span)+span)%span, 0)
		s, err := Parse(spec, time.UTC)
		if err != nil {
			if strings.HasPrefix(err.Error(), "parse ") {
				t.Fatalf("%q passed the field checks but robfig/cron rejects it: %v", spec, err)
			}
			return
		}
		again, err := Parse(s.String(), time.UTC)
		if err != nil || *again != *s {
			t.Fatalf("%q: String() %q does not parse to the same schedule: %v", spec, s, err)
		}
		if s.kind != kindEvery {
			checkAgainstRobfig(t, s, after)
		}
		for _, loc := range zones {
			z := *s
			z.loc = loc
			checkSlots(t, &z, after)
		}
	})
}

// checkAgainstRobfig compares Next in UTC, where there is no DST, with robfig/cron's Next.
func checkAgainstRobfig(t *testing.T, s *Schedule, after time.Time) {
	words := strings.Fields(s.spec)
	if strings.HasPrefix(words[0], "@") {
		d, _ := descriptorFields(words[0])
		words = strings.Fields(d)
	}
	if len(words) == 5 {
		words = append([]string{"0"}, words...)
	}
	rs, err := robfigBits(words)
	if err != nil {
		t.Fatalf("%q: robfig/cron: %v", s.spec, err)
	}
	rs.Location = time.UTC
	want := rs.Next(after)
	got := s.Next(after)
	if !want.IsZero() && !got.At.Equal(want) { // robfig gives up after five years
		t.Fatalf("%q after %s: got %s, robfig/cron %s", s.spec, after.UTC(), got.At, want)
	}
}

// checkSlots checks a few slots after after, and that Next just before a slot finds that slot.
func checkSlots(t *testing.T, s *Schedule, after time.Time) {
	for range 4 {
		sl := s.Next(after)
		if sl.At.IsZero() {
			return
		}
		if !sl.At.After(after) {
			t.Fatalf("%q in %s: Next(%s)=%s, not after it", s.spec, s.loc, after, sl.At)
		}
		if again := s.Next(sl.At.Add(-time.Nanosecond)); again != sl {
			t.Fatalf("%q in %s: Next(%s)=%+v, but Next just before it gives %+v", s.spec, s.loc, after, sl, again)
		}
		if s.kind == kindEvery {
			if sl.At.Unix()%s.every != 0 {
				t.Fatalf("%q: slot %s is not a multiple of the period", s.spec, sl.At)
			}
		} else if !s.matchesWallTime(sl.Nominal) {
			t.Fatalf("%q in %s: slot %+v: nominal time does not match the fields", s.spec, s.loc, sl)
		}
		if reading := wallTimeOf(sl.At); sl.Adjusted == (reading == sl.Nominal) {
			t.Fatalf("%q in %s: slot %+v: Adjusted=%v but reading %s", s.spec, s.loc, sl, sl.Adjusted, reading)
		}
		if sl.Adjusted {
			n := sl.Nominal
			if exists := time.Date(n.Year, n.Month, n.Day, n.Hour, n.Minute, n.Second, 0, s.loc); wallTimeOf(exists) == n {
				t.Fatalf("%q in %s: slot %+v adjusted, but its nominal time exists", s.spec, s.loc, sl)
			}
			if start, _ := sl.At.ZoneBounds(); !start.Equal(sl.At) {
				t.Fatalf("%q in %s: adjusted slot %+v is not at an offset change", s.spec, s.loc, sl)
			}
		}
		after = sl.At
	}
}

// matchesWallTime reports whether a reading matches the fields, written independently of
// nextMatch.
func (s *Schedule) matchesWallTime(w WallTime) bool {
	if s.second&(1<<w.Second) == 0 || s.minute&(1<<w.Minute) == 0 || s.hour&(1<<w.Hour) == 0 || s.month&(1<<int(w.Month)) == 0 {
		return false
	}
	wd := time.Date(w.Year, w.Month, w.Day, 12, 0, 0, 0, time.UTC).Weekday()
	dom, dow := s.dom&(1<<w.Day) != 0, s.dow&(1<<int(wd)) != 0
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}
