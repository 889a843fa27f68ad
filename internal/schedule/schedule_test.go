package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func TestParseSchedule(t *testing.T) {
	tests := []struct {
		name, spec, from string
		wantString       string
		wantWallClock    bool
		want             []string // the first slots after from, in UTC
	}{
		{"Daily", "0 2 * * *", "2024-01-01T00:00:00Z", "0 2 * * *", true, []string{
			"2024-01-01T02:00:00Z", "2024-01-02T02:00:00Z"}},
		{"WhitespaceNormalised", "  0\t2  * * *  ", "2024-01-01T00:00:00Z", "0 2 * * *", true, []string{
			"2024-01-01T02:00:00Z"}},
		{"QuarterHours", "*/15 * * * *", "2024-01-01T00:07:00Z", "*/15 * * * *", false, []string{
			"2024-01-01T00:15:00Z", "2024-01-01T00:30:00Z"}},
		{"HourStepIsRealTime", "0 */6 * * *", "2024-01-01T00:00:00Z", "0 */6 * * *", false, []string{
			"2024-01-01T06:00:00Z", "2024-01-01T12:00:00Z"}},
		{"HourRangeStepIsWallClock", "0 0-23/6 * * *", "2024-01-01T00:00:00Z", "0 0-23/6 * * *", true, []string{
			"2024-01-01T06:00:00Z", "2024-01-01T12:00:00Z"}},
		{"ValueStepMeansToMax", "0 20/2 * * *", "2024-01-01T00:00:00Z", "0 20/2 * * *", true, []string{
			"2024-01-01T20:00:00Z", "2024-01-01T22:00:00Z", "2024-01-02T20:00:00Z"}},
		{"WeekdayNames", "30 9 * * MON-fri", "2024-01-05T12:00:00Z", "30 9 * * MON-fri", true, []string{
			"2024-01-08T09:30:00Z", "2024-01-09T09:30:00Z"}},
		{"MonthNames", "0 12 1 jan,JUL *", "2024-01-02T00:00:00Z", "0 12 1 jan,JUL *", true, []string{
			"2024-07-01T12:00:00Z", "2025-01-01T12:00:00Z"}},
		{"DomOrDowWhenBothRestricted", "0 0 1,15 * 1", "2024-01-01T00:00:00Z", "0 0 1,15 * 1", true, []string{
			"2024-01-08T00:00:00Z", "2024-01-15T00:00:00Z", "2024-01-22T00:00:00Z", "2024-01-29T00:00:00Z", "2024-02-01T00:00:00Z"}},
		{"DomAndDowWhenOneIsStar", "0 0 13 * ?", "2024-01-01T00:00:00Z", "0 0 13 * ?", true, []string{
			"2024-01-13T00:00:00Z", "2024-02-13T00:00:00Z"}},
		{"StepCountsAsRestriction", "0 0 */10 * 1", "2024-01-01T00:00:00Z", "0 0 */10 * 1", true, []string{
			"2024-01-08T00:00:00Z", "2024-01-11T00:00:00Z", "2024-01-15T00:00:00Z"}},
		{"LeapDay", "0 0 29 2 *", "2025-03-01T00:00:00Z", "0 0 29 2 *", true, []string{
			"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"LeapDayAcrossCentury", "0 0 29 2 *", "2097-01-01T00:00:00Z", "0 0 29 2 *", true, []string{
			"2104-02-29T00:00:00Z"}},
		{"SixFieldsSeconds", "*/20 * * * * *", "2024-01-01T00:00:05Z", "*/20 * * * * *", false, []string{
			"2024-01-01T00:00:20Z", "2024-01-01T00:00:40Z", "2024-01-01T00:01:00Z"}},
		{"SixFieldsFixed", "30 0 2 * * *", "2024-01-01T00:00:00Z", "30 0 2 * * *", true, []string{
			"2024-01-01T02:00:30Z"}},
		{"Yearly", "@yearly", "2024-03-01T00:00:00Z", "@yearly", true, []string{"2025-01-01T00:00:00Z"}},
		{"Annually", "@annually", "2024-03-01T00:00:00Z", "@annually", true, []string{"2025-01-01T00:00:00Z"}},
		{"Monthly", "@monthly", "2024-03-01T00:00:00Z", "@monthly", true, []string{"2024-04-01T00:00:00Z"}},
		{"Weekly", "@weekly", "2024-03-01T00:00:00Z", "@weekly", true, []string{"2024-03-03T00:00:00Z"}},
		{"Daily", "@daily", "2024-03-01T00:00:00Z", "@daily", true, []string{"2024-03-02T00:00:00Z"}},
		{"Midnight", "@midnight", "2024-03-01T00:00:00Z", "@midnight", true, []string{"2024-03-02T00:00:00Z"}},
		{"Hourly", "@hourly", "2024-03-01T00:00:00Z", "@hourly", false, []string{"2024-03-01T01:00:00Z"}},
		{"Every", "@every  90m", "2024-03-01T00:00:00Z", "@every 90m", false, []string{
			"2024-03-01T01:30:00Z", "2024-03-01T03:00:00Z"}},
		{"NanosecondsAfterSlot", "0 2 * * *", "2024-01-01T02:00:00.5Z", "0 2 * * *", true, []string{
			"2024-01-02T02:00:00Z"}},
		{"JustBeforeSlot", "0 2 * * *", "2024-01-01T01:59:59.999999999Z", "0 2 * * *", true, []string{
			"2024-01-01T02:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.spec, time.UTC)
			if s.String() != tt.wantString {
				t.Fatalf("String()=%q, want %q", s.String(), tt.wantString)
			}
			if s.WallClock() != tt.wantWallClock {
				t.Fatalf("WallClock()=%v, want %v", s.WallClock(), tt.wantWallClock)
			}
			if s.Location() != time.UTC {
				t.Fatalf("Location()=%v, want UTC", s.Location())
			}
			var got []string
			for _, sl := range s.Slots(mustTime(t, tt.from), len(tt.want)) {
				got = append(got, sl.At.UTC().Format(time.RFC3339))
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Fatalf("slots after %s = %v, want %v", tt.from, got, tt.want)
			}
		})
	}
}

func TestParseSchedule_Errors(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"", "empty schedule"},
		{"  \t ", "empty schedule"},
		{"* * * *", "expected 5 or 6 fields, got 4"},
		{"* * * * * * *", "expected 5 or 6 fields, got 7"},
		{"0 25 * * *", "hour field: value 25 out of range [0, 23]"},
		{"60 * * * *", "minute field: value 60 out of range [0, 59]"},
		{"61 0 * * * *", "second field: value 61 out of range [0, 59]"},
		{"0 0 0 * *", "day-of-month field: value 0 out of range [1, 31]"},
		{"0 0 32 * *", "day-of-month field: value 32 out of range [1, 31]"},
		{"0 0 * 13 *", "month field: value 13 out of range [1, 12]"},
		{"0 0 * * 8", "day-of-week field: value 8 out of range [0, 7]"},
		{"0 0 1-40 * *", "day-of-month field: value 40 out of range [1, 31]"},
		{"99999999999999999999 * * * *", "minute field: value 99999999999999999999 out of range [0, 59]"},
		{"0 0 * foo *", `month field: invalid value "foo" (want 1-12 or jan-dec)`},
		{"0 0 * * mon-foo", `day-of-week field: invalid value "foo" in "mon-foo" (want 0-7 or sun-sat)`},
		{"0 0 * * monday", `day-of-week field: invalid value "monday" (want 0-7 or sun-sat)`},
		{"x * * * *", `minute field: invalid value "x" (want 0-59)`},
		{"+5 * * * *", `minute field: invalid value "+5" (want 0-59)`},
		{"-5 * * * *", `minute field: invalid value "" in "-5" (want 0-59)`},
		{"*-5 * * * *", `minute field: invalid value "*" in "*-5" (want 0-59)`},
		{"0 L * * *", `hour field: invalid value "L" (want 0-23)`},
		{"0 5-2 * * *", `hour field: range "5-2" runs backwards (5 > 2)`},
		{"1-2-3 * * * *", `minute field: too many hyphens in "1-2-3"`},
		{"1/2/3 * * * *", `minute field: too many slashes in "1/2/3"`},
		{"*/0 * * * *", "minute field: step 0 out of range [1, 60]"},
		{"*/61 * * * *", "minute field: step 61 out of range [1, 60]"},
		{"0 */25 * * *", "hour field: step 25 out of range [1, 24]"},
		{"*/x * * * *", `minute field: invalid step "x" in "*/x"`},
		{"1,,2 * * * *", `minute field: empty list element in "1,,2"`},
		{"0 0 , * *", `day-of-month field: empty list element in ","`},
		{"0 0 30 2 *", `schedule never fires: day-of-month "30" never occurs in month "2"`},
		{"0 0 31 apr,jun,sep,nov *", `schedule never fires: day-of-month "31" never occurs in month "apr,jun,sep,nov"`},
		{"@sometimes", `unknown descriptor "@sometimes" (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every)`},
		{"@DAILY", `unknown descriptor "@DAILY" (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every)`},
		{"@daily 5", `descriptor @daily takes no argument, got "5"`},
		{"@every", "@every: missing duration, such as @every 10s"},
		{"@every 0s", "@every: duration must be positive, got 0s"},
		{"@every -5s", "@every: duration must be positive, got -5s"},
		{"@every 500ms", "@every: duration 500ms is shorter than 1s"},
		{"@every 1.5s", "@every: duration 1.5s is not a whole number of seconds"},
		{"@every 10", `@every: invalid duration "10" (use a unit, such as 10s or 1h30m)`},
		{"@every 1s 2s", `@every: want one duration, got "1s 2s"`},
		{"CRON_TZ=Europe/Berlin 0 2 * * *", `time zone prefix "CRON_TZ=Europe/Berlin" not allowed: the zone comes from the job's timezone key`},
		{"tz=UTC 0 2 * * *", `time zone prefix "tz=UTC" not allowed: the zone comes from the job's timezone key`},
	}
	for _, tt := range tests {
		s, err := Parse(tt.spec, time.UTC)
		if err == nil {
			t.Errorf("Parse(%q) = %q, want error %q", tt.spec, s, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("Parse(%q) error:\n got %s\nwant %s", tt.spec, err, tt.want)
		}
	}
	if _, err := Parse("0 2 * * *", nil); err == nil || err.Error() != "nil location" {
		t.Errorf("nil location: err=%v, want nil location", err)
	}
}

// TestParseSchedule_DescriptorsMatchRobfig checks that each descriptor is the schedule robfig/cron
// gives it.
func TestParseSchedule_DescriptorsMatchRobfig(t *testing.T) {
	for _, d := range []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"} {
		s := mustParse(t, d, time.UTC)
		r, err := cron.ParseStandard(d)
		if err != nil {
			t.Fatal(err)
		}
		rs := r.(*cron.SpecSchedule)
		got := [...]uint64{s.second, s.minute, s.hour, s.dom, s.month, s.dow}
		want := [...]uint64{rs.Second &^ starBit, rs.Minute &^ starBit, rs.Hour &^ starBit, rs.Dom &^ starBit, rs.Month &^ starBit, rs.Dow &^ starBit}
		if got != want || s.domStar != (rs.Dom&starBit != 0) || s.dowStar != (rs.Dow&starBit != 0) {
			t.Errorf("%s: bits %x stars %v/%v, robfig %x (dom %x dow %x)", d, got, s.domStar, s.dowStar, want, rs.Dom, rs.Dow)
		}
	}
}

// TestParseSchedule_ClockRule pins which schedules follow the wall clock: cronie's rule, a wildcard
// (`*` or `?`, with or without a step, anywhere in the list) in the second, minute or hour field
// means real time.
func TestParseSchedule_ClockRule(t *testing.T) {
	tests := []struct {
		spec string
		wall bool
	}{
		{"0 2 * * *", true},
		{"0,30 1,2 * * *", true},
		{"0 1-5 * * *", true},
		{"0 0-23/2 * * *", true},
		{"0 5/2 * * *", true},
		{"5 4 * * sun", true},
		{"@daily", true},
		{"@weekly", true},
		{"@monthly", true},
		{"@yearly", true},
		{"0 2 * * * *", false}, // 6 fields: second 0, minute 2, hour `*`
		{"0 0 2 * * *", true},
		{"* 2 * * *", false},
		{"*/15 2 * * *", false},
		{"0 * * * *", false},
		{"0 */2 * * *", false},
		{"0 1,*/6 * * *", false},
		{"0 ? * * *", false},
		{"*/10 30 2 * * *", false},
		{"@hourly", false},
		{"@every 1h", false},
	}
	for _, tt := range tests {
		s := mustParse(t, tt.spec, time.UTC)
		if s.WallClock() != tt.wall {
			t.Errorf("%q: WallClock()=%v, want %v", tt.spec, s.WallClock(), tt.wall)
		}
	}
}

// TestSchedule_Every checks the acceptance rule for @every: slots are multiples of the period since
// the Unix epoch, whatever the zone and whichever replica parsed the spec.
func TestSchedule_Every(t *testing.T) {
	afters := []time.Time{
		time.Unix(0, 0), time.Unix(-1, 0), time.Unix(-12345, 678), time.Unix(1_700_000_000, 0),
		time.Unix(1_700_000_003, 999_999_999), time.Date(2024, 3, 10, 6, 59, 59, 0, time.UTC),
		time.Date(2024, 11, 3, 5, 44, 0, 0, time.UTC), time.Date(2027, 12, 31, 23, 59, 59, 1, time.UTC),
	}
	for _, spec := range []string{"@every 10s", "@every 90m", "@every 7s", "@every 1h30m", "@every 24h", "@every 1s"} {
		d := mustParse(t, spec, time.UTC).every
		replicaA := mustParse(t, spec, mustZone(t, "America/New_York"))
		replicaB := mustParse(t, spec, mustZone(t, "Australia/Lord_Howe"))
		for _, after := range afters {
			a, b := replicaA.Slots(after, 50), replicaB.Slots(after, 50)
			if len(a) != 50 || len(b) != 50 {
				t.Fatalf("%s after %s: %d and %d slots, want 50", spec, after, len(a), len(b))
			}
			for i := range a {
				if !a[i].At.Equal(b[i].At) {
					t.Fatalf("%s: replicas disagree: %s vs %s", spec, a[i].At, b[i].At)
				}
				if a[i].At.Nanosecond() != 0 || a[i].At.Unix()%d != 0 {
					t.Fatalf("%s: slot %s is not a multiple of %ds since the epoch", spec, a[i].At, d)
				}
				if a[i].Adjusted || wallTimeOf(a[i].At) != a[i].Nominal {
					t.Fatalf("%s: slot %+v: nominal should be its reading", spec, a[i])
				}
			}
			if gap := a[0].At.Sub(after); gap <= 0 || gap > time.Duration(d)*time.Second {
				t.Fatalf("%s after %s: first slot %s, want within one period", spec, after, a[0].At)
			}
			for i := 1; i < len(a); i++ {
				if gap := a[i].At.Sub(a[i-1].At); gap != time.Duration(d)*time.Second {
					t.Fatalf("%s: slots %s and %s are %s apart", spec, a[i-1].At, a[i].At, gap)
				}
			}
		}
	}
}

func TestSchedule_Between(t *testing.T) {
	from := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	t.Run("HalfOpenWindow", func(t *testing.T) {
		s := mustParse(t, "0 * * * *", time.UTC)
		got, err := s.Between(from, from.Add(3*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || !got[0].At.Equal(from.Add(time.Hour)) || !got[2].At.Equal(from.Add(3*time.Hour)) {
			t.Fatalf("slots=%v, want 01:00, 02:00, 03:00", formatSlots(got))
		}
	})
	t.Run("EmptyWindow", func(t *testing.T) {
		s := mustParse(t, "0 * * * *", time.UTC)
		for _, to := range []time.Time{from, from.Add(-time.Hour), from.Add(59 * time.Minute)} {
			if got, err := s.Between(from, to); err != nil || len(got) != 0 {
				t.Fatalf("Between(%s, %s)=%v, %v, want none", from, to, got, err)
			}
		}
	})
	t.Run("SixHoursOfSeconds", func(t *testing.T) {
		for _, spec := range []string{"@every 1s", "* * * * * *"} {
			got, err := mustParse(t, spec, time.UTC).Between(from, from.Add(6*time.Hour))
			if err != nil {
				t.Fatalf("%s: %v", spec, err)
			}
			if len(got) != 21600 || !got[len(got)-1].At.Equal(from.Add(6*time.Hour)) {
				t.Fatalf("%s: %d slots ending %s, want 21600 ending at 06:00", spec, len(got), got[len(got)-1].At)
			}
		}
	})
	t.Run("TooMany", func(t *testing.T) {
		for _, spec := range []string{"@every 1s", "* * * * * *"} {
			got, err := mustParse(t, spec, time.UTC).Between(from, from.Add(48*time.Hour))
			if !errors.Is(err, ErrTooManySlots) || got != nil {
				t.Fatalf("%s over 48h: %d slots, err=%v, want ErrTooManySlots", spec, len(got), err)
			}
		}
	})
	t.Run("AtTheLimit", func(t *testing.T) {
		got, err := mustParse(t, "@every 1s", time.UTC).Between(from, from.Add(MaxBetween*time.Second))
		if err != nil || len(got) != MaxBetween {
			t.Fatalf("%d slots, err=%v, want %d", len(got), err, MaxBetween)
		}
	})
}

func TestSchedule_Last(t *testing.T) {
	ny := mustZone(t, "America/New_York")
	from := time.Date(2024, 11, 2, 12, 0, 0, 0, ny)
	for _, spec := range []string{"30 1 * * *", "0 * * * *", "@every 7m", "*/20 * * * * *", "0 0 1 1 *"} {
		s := mustParse(t, spec, ny)
		for _, span := range []time.Duration{time.Second, time.Hour, 13 * time.Hour, 40 * time.Hour} {
			all, err := s.Between(from, from.Add(span))
			if err != nil {
				t.Fatal(err)
			}
			last, ok := s.Last(from, from.Add(span))
			if ok != (len(all) > 0) || (ok && last != all[len(all)-1]) {
				t.Fatalf("%s over %s: Last=%v %v, Between ends %v", spec, span, last, ok, formatSlots(all))
			}
		}
	}
}

func TestSchedule_NextDoesNotAllocate(t *testing.T) {
	after := time.Date(2025, 3, 30, 0, 30, 0, 0, time.UTC)
	for _, spec := range []string{"30 2 * * *", "*/15 * * * *", "@every 10s", "0 0 29 2 *"} {
		s := mustParse(t, spec, mustZone(t, "Europe/Berlin"))
		if n := testing.AllocsPerRun(100, func() { s.Next(after) }); n != 0 {
			t.Errorf("%s: Next allocates %.0f times, want 0", spec, n)
		}
	}
}

func BenchmarkParseSchedule(b *testing.B) {
	for _, spec := range []string{"0 2 * * *", "*/5 9-17 * * mon-fri", "@every 10s"} {
		b.Run(spec, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(spec, time.UTC); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSchedule_Next(b *testing.B) {
	berlin := mustZone(b, "Europe/Berlin")
	ny := mustZone(b, "America/New_York")
	cases := []struct {
		name, spec string
		loc        *time.Location
		after      time.Time
	}{
		{"DailyBerlin", "0 2 * * *", berlin, time.Date(2025, 6, 1, 2, 0, 0, 0, berlin)},
		{"DailyBerlinAtSpringForward", "30 2 * * *", berlin, time.Date(2025, 3, 29, 2, 30, 0, 0, berlin)},
		{"DailyNewYorkInRepeatedHour", "30 1 * * *", ny, time.Date(2024, 11, 3, 6, 10, 0, 0, time.UTC)},
		{"QuarterHourNewYork", "*/15 * * * *", ny, time.Date(2025, 6, 1, 2, 0, 0, 0, ny)},
		{"WeekdaysUTC", "30 9 * * mon-fri", time.UTC, time.Date(2025, 6, 6, 9, 30, 0, 0, time.UTC)},
		{"Every10s", "@every 10s", berlin, time.Date(2025, 6, 1, 2, 0, 0, 0, berlin)},
		{"LeapDay", "0 0 29 2 *", time.UTC, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		s := mustParse(b, c.spec, c.loc)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Next(c.after)
			}
		})
	}
}
