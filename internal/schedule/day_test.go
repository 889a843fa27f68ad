package schedule

import (
	"testing"
	"time"
)

// TestDayStart: a day's first instant, where DST skips midnight too, and for a day a zone skips.
func TestDayStart(t *testing.T) {
	for _, tc := range []struct {
		zone      string
		y         int
		m         time.Month
		d         int
		wantLocal string
	}{
		{"Europe/Berlin", 2026, time.March, 29, "2026-03-29T00:00:00+01:00"},
		{"America/Santiago", 2024, time.September, 8, "2024-09-08T01:00:00-03:00"}, // midnight skipped
		{"America/Havana", 2025, time.March, 9, "2025-03-09T01:00:00-04:00"},
		{"Pacific/Apia", 2011, time.December, 30, "2011-12-31T00:00:00+14:00"}, // the day skipped
		{"Asia/Amman", 2021, time.October, 29, "2021-10-29T00:00:00+03:00"},    // midnight repeated
		{"Australia/Lord_Howe", 2026, time.April, 5, "2026-04-05T00:00:00+11:00"},
	} {
		loc, err := time.LoadLocation(tc.zone)
		if err != nil {
			t.Fatal(err)
		}
		if got := DayStart(tc.y, tc.m, tc.d, loc).Format(time.RFC3339); got != tc.wantLocal {
			t.Errorf("%s %d-%02d-%02d: DayStart=%s, want %s", tc.zone, tc.y, tc.m, tc.d, got, tc.wantLocal)
		}
	}
}
