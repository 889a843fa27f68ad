package schedule

import (
	"testing"
	"time"
)

func TestSchedule_ShortestGap(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		spec string
		loc  *time.Location
		want time.Duration
		ok   bool
	}{
		{"@every 90s", time.UTC, 90 * time.Second, true},
		{"@every 87600h", time.UTC, 87600 * time.Hour, true},
		{"* * * * * *", time.UTC, time.Second, true},
		{"*/5 * * * *", time.UTC, 5 * time.Minute, true},
		{"0 0,1 * * *", time.UTC, time.Hour, true},
		{"0 9 * * 1-5", time.UTC, 24 * time.Hour, true},
		{"0 0 1 * *", time.UTC, 28 * 24 * time.Hour, true},
		// 02:00 is skipped on 29 March 2026 and fires at 03:00 CEST, 23h before the next 02:00.
		{"0 2 * * *", berlin, 23 * time.Hour, true},
		// 00:30 each day: the spring-forward day is 23h long, so is that gap.
		{"30 0 * * *", berlin, 23 * time.Hour, true},
		// One slot (2028) at most in a year: the gap is a year at least, and a jitter must be
		// shorter. Before, no bound was found and any jitter passed.
		{"0 0 29 2 *", time.UTC, GapSpan, true},
		{"0 0 1 1 *", time.UTC, 365 * 24 * time.Hour, true}, // yearly: 365 days, whatever the date
	}
	for _, tc := range cases {
		// The gap of a yearly schedule does not depend on the day it is checked on.
		if tc.spec == "0 0 1 1 *" {
			s, _ := Parse(tc.spec, tc.loc)
			for _, day := range []time.Time{time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)} {
				if got, _ := s.ShortestGap(day); got != tc.want {
					t.Errorf("%q from %s: ShortestGap = %s, want %s", tc.spec, day, got, tc.want)
				}
			}
		}
		s, err := Parse(tc.spec, tc.loc)
		if err != nil {
			t.Fatalf("%q: %v", tc.spec, err)
		}
		got, ok := s.ShortestGap(from)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q in %s: ShortestGap = %s, %v; want %s, %v", tc.spec, tc.loc, got, ok, tc.want, tc.ok)
		}
	}
}
