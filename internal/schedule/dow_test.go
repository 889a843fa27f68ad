package schedule

import (
	"testing"
	"time"
)

// TestParseSchedule_SundayIsSeven checks day-of-week 7, as crontab and cronie read it, against
// slots computed by hand from a calendar: 2026-02-27 is a Friday, 2026-03-01 a Sunday.
func TestParseSchedule_SundayIsSeven(t *testing.T) {
	after := time.Date(2026, 2, 27, 12, 0, 0, 0, time.UTC)                              // Friday noon
	day := func(d int) time.Time { return time.Date(2026, 3, d, 9, 0, 0, 0, time.UTC) } // 9:00 on March d
	feb28 := time.Date(2026, 2, 28, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		spec string
		want []time.Time
	}{
		{"0 9 * * 7", []time.Time{day(1), day(8), day(15)}},                               // Sundays
		{"0 9 * * 0,7", []time.Time{day(1), day(8), day(15)}},                             // Sunday twice is Sunday
		{"0 9 * * 1-7", []time.Time{feb28, day(1), day(2), day(3)}},                       // every day
		{"0 9 * * 5-7", []time.Time{feb28, day(1), day(6), day(7), day(8)}},               // Friday to Sunday
		{"0 9 * * 5/1", []time.Time{feb28, day(1), day(6), day(7), day(8)}},               // 5/1 is 5-7
		{"0 9 * * sat-7", []time.Time{feb28, day(1), day(7), day(8)}},                     // a name and 7
		{"0 9 * * 1-7/2", []time.Time{day(1), day(2), day(4), day(6), day(8)}},            // Mon, Wed, Fri, Sun
		{"0 9 * * 1/2", []time.Time{day(1), day(2), day(4), day(6), day(8)}},              // the same from 1/2
		{"0 9 * * */2", []time.Time{feb28, day(1), day(3), day(5), day(7)}},               // Sun, Tue, Thu, Sat
		{"0 9 * * */7", []time.Time{day(1), day(8)}},                                      // 0 and 7: Sunday
		{"0 9 13 * 7", []time.Time{day(1), day(8), day(13), day(15)}},                     // the 13th or a Sunday
		{"0 9 * * 0-7", []time.Time{feb28, day(1), day(2)}},                               // every day
		{"0 0 9 * * 6-7", []time.Time{feb28, day(1), day(7)}},                             // with seconds
		{"0 9 * * 3,7,5", []time.Time{day(1), day(4), day(6), day(8)}},                    // a list
		{"0 9 * * 2-3,6-7", []time.Time{feb28, day(1), day(3), day(4), day(7)}},           // two ranges
		{"0 9 * * 6", []time.Time{feb28, day(7)}},                                         // unchanged without 7
		{"0 9 * * mon-fri", []time.Time{day(2), day(3), day(4), day(5), day(6)}},          // unchanged names
		{"0 9 * * ?", []time.Time{feb28, day(1)}},                                         // unchanged wildcard
		{"0 9 * * */1", []time.Time{feb28, day(1)}},                                       // unchanged wildcard
		{"0 9 1 * */1", []time.Time{day(1), time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)}}, // */1 is *: both match
	} {
		t.Run(tc.spec, func(t *testing.T) {
			s, err := Parse(tc.spec, time.UTC)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.spec, err)
			}
			at := after
			for i, want := range tc.want {
				got := s.Next(at).At
				if !got.Equal(want) {
					t.Fatalf("slot %d after %s = %s (%s), want %s (%s)", i, at, got, got.Weekday(), want, want.Weekday())
				}
				at = got
			}
		})
	}
	for _, spec := range []string{"0 9 * * 8", "0 9 * * 0-8", "0 9 * * 7-1", "0 9 * * */9"} {
		if _, err := Parse(spec, time.UTC); err == nil {
			t.Errorf("Parse(%q) accepted it", spec)
		}
	}
}
