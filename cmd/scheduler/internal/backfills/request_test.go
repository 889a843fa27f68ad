package backfills

import (
	"strings"
	"testing"
	"time"

	"scheduler/internal/backfill"
	"scheduler/internal/jobs"
	"scheduler/internal/schedule"
)

// TestParseRange: times in RFC 3339 or dates in the job's zone, a date as --to being the whole
// day (of 23 hours on a DST change); reversed and future ranges are refused.
func TestParseRange(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, from, to string
		wantFrom       time.Time
		wantTo         time.Time
		err            string
	}{
		{name: "Dates", from: "2026-01-10", to: "2026-01-10",
			wantFrom: time.Date(2026, 1, 9, 23, 0, 0, 0, time.UTC), wantTo: time.Date(2026, 1, 10, 22, 59, 59, 999999000, time.UTC)},
		{name: "SpringForwardDay", from: "2026-03-29", to: "2026-03-29",
			wantFrom: time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC), wantTo: time.Date(2026, 3, 29, 21, 59, 59, 999999000, time.UTC)},
		{name: "RFC3339", from: "2026-01-10T02:00:00Z", to: "2026-01-10T03:00:00+01:00",
			wantFrom: time.Date(2026, 1, 10, 2, 0, 0, 0, time.UTC), wantTo: time.Date(2026, 1, 10, 2, 0, 0, 0, time.UTC)},
		{name: "Reversed", from: "2026-01-11", to: "2026-01-10", err: "is after --to"},
		{name: "Future", from: "2026-05-31", to: "2026-06-01", err: "is in the future"},
		{name: "Missing", from: "2026-05-31", err: "required"},
		{name: "BadTime", from: "10/01/2026", to: "2026-01-10", err: `--from "10/01/2026"`},
		// The year 1's first instant is the zero time, which no search of the schedule answers.
		{name: "YearOne", from: "0001-01-01T00:00:00Z", to: "2026-01-10", err: "is before 1970-01-01T00:00:00Z"},
		{name: "BeforeTheEpoch", from: "1969-12-31", to: "2026-01-10", err: "is before 1970-01-01T00:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to, err := ParseRange(tc.from, tc.to, berlin, now)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case !from.Equal(tc.wantFrom) || !to.Equal(tc.wantTo):
				t.Fatalf("range %s .. %s, want %s .. %s", from.UTC(), to.UTC(), tc.wantFrom, tc.wantTo)
			}
		})
	}
}

// TestSlots: the hourly slots of a day in Berlin are 24, of its spring-forward day 23; a
// single instant that is a slot is one.
func TestSlots(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schedule.Parse("@hourly", berlin)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for day, want := range map[string]int{"2026-01-10": 24, "2026-03-29": 23} {
		from, to, err := ParseRange(day, day, berlin, now)
		if err != nil {
			t.Fatal(err)
		}
		slots, err := Slots(sch, from, to)
		if err != nil || len(slots) != want || !slots[0].Equal(from) {
			t.Fatalf("%s: %d slots from %v (err %v), want %d from %s", day, len(slots), slots, err, want, from)
		}
	}
	at := time.Date(2026, 1, 10, 5, 0, 0, 0, time.UTC)
	if slots, err := Slots(sch, at, at); err != nil || len(slots) != 1 {
		t.Fatalf("one instant: %v (err %v)", slots, err)
	}
	// A request written by hand may start anywhere: before the epoch it is refused, not
	// answered with no slots.
	if slots, err := Slots(sch, time.Time{}, at); err == nil || !strings.Contains(err.Error(), "is before 1970") {
		t.Fatalf("from the year 1: %d slots, err %v; want refused", len(slots), err)
	}
}

// TestOverlap: a job's replace is queue for a backfill; an asked overlap wins; replace cannot be asked.
func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		asked string
		job   jobs.Overlap
		want  backfill.Overlap
	}{
		{"", jobs.OverlapSkip, backfill.OverlapSkip},
		{"", jobs.OverlapReplace, backfill.OverlapQueue},
		{"", jobs.OverlapAllow, backfill.OverlapAllow},
		{"allow", jobs.OverlapSkip, backfill.OverlapAllow},
	} {
		if got, err := Overlap(tc.asked, tc.job); err != nil || got != tc.want {
			t.Errorf("Overlap(%q, %q) = %q (err %v), want %q", tc.asked, tc.job, got, err, tc.want)
		}
	}
	if _, err := Overlap("replace", jobs.OverlapSkip); err == nil {
		t.Error("Overlap(replace): no error")
	}
}

// TestParseRange_MidnightSkipped: a date whose midnight DST skips (Santiago, 8 September 2024)
// is the day from its first instant (01:00 -03) to the next day's, so the slots of `0 23 * * *`
// on it are that day's 23:00, not the evening before's. Before, the range began at 23:00 the
// day before and held that slot instead.
func TestParseRange_MidnightSkipped(t *testing.T) {
	santiago, err := time.LoadLocation("America/Santiago")
	if err != nil {
		t.Fatal(err)
	}
	from, to, err := ParseRange("2024-09-08", "2024-09-08", santiago, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	s, err := schedule.Parse("0 23 * * *", santiago)
	if err != nil {
		t.Fatal(err)
	}
	slots, err := Slots(s, from, to)
	want := time.Date(2024, 9, 8, 23, 0, 0, 0, santiago)
	if err != nil || len(slots) != 1 || !slots[0].Equal(want) {
		t.Fatalf("range %s .. %s: slots %v, %v; want %s alone", from.In(santiago), to.In(santiago), slots, err, want)
	}
}
