package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// descriptorFields gives the five fields a descriptor stands for; they produce the same bit sets as
// robfig/cron's own descriptors (a test checks it), and they classify the descriptor the way cronie
// does: @hourly follows real time, the others follow the wall clock.
func descriptorFields(d string) (string, bool) {
	switch d {
	case "@yearly", "@annually":
		return "0 0 1 1 *", true
	case "@monthly":
		return "0 0 1 * *", true
	case "@weekly":
		return "0 0 * * 0", true
	case "@daily", "@midnight":
		return "0 0 * * *", true
	case "@hourly":
		return "0 * * * *", true
	}
	return "", false
}

// Parse parses a schedule spec whose wall-clock fields are read in loc:
//
//   - five fields: minute hour day-of-month month day-of-week;
//   - six fields: a leading seconds field, then the five above;
//   - a descriptor: @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly;
//   - "@every D": every D of real time, D a whole number of seconds, at least 1s, in Go duration
//     syntax (10s, 90m, 1h30m); slots fall on multiples of D since the Unix epoch.
//
// A field is a comma-separated list of `*` (or `?`), a value, or a range lo-hi, each optionally
// followed by /step; `v/step` means v-max/step. Months and days of the week also take names
// (jan-dec, sun-sat, any case); day-of-week runs 0-7 with both 0 and 7 for Sunday, as in crontab
// and cronie, so 1-7 is Monday to Sunday and 5/1 is Friday to Sunday. Day-of-month and
// day-of-week combine as in robfig/cron: when either is `*` or `?` both must match, otherwise
// either may (note that `*/2` counts as a restriction, not as `*`).
//
// The zone comes from the job's timezone key, so TZ= and CRON_TZ= prefixes are rejected, as is a
// spec that can never fire (such as the 30th of February). Errors name the field and the value.
func Parse(spec string, loc *time.Location) (*Schedule, error) {
	if loc == nil {
		return nil, errors.New("nil location")
	}
	words := strings.Fields(spec)
	if len(words) == 0 {
		return nil, errors.New("empty schedule")
	}
	if up := strings.ToUpper(words[0]); strings.HasPrefix(up, "TZ=") || strings.HasPrefix(up, "CRON_TZ=") {
		return nil, fmt.Errorf("time zone prefix %q not allowed: the zone comes from the job's timezone key", words[0])
	}
	s := &Schedule{spec: strings.Join(words, " "), loc: loc}
	if strings.HasPrefix(words[0], "@") {
		if words[0] == "@every" {
			every, err := parseEvery(words[1:])
			if err != nil {
				return nil, err
			}
			s.kind = kindEvery
			s.every = every
			return s, nil
		}
		fields, ok := descriptorFields(words[0])
		if !ok {
			return nil, fmt.Errorf("unknown descriptor %q (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every)", words[0])
		}
		if len(words) > 1 {
			return nil, fmt.Errorf("descriptor %s takes no argument, got %q", words[0], strings.Join(words[1:], " "))
		}
		words = strings.Fields(fields)
	}
	if err := s.parseFields(words); err != nil {
		return nil, err
	}
	return s, nil
}

// parseEvery reads the duration of "@every D".
// MaxEvery is the longest period @every takes.
const MaxEvery = 10 * 8760 * time.Hour

func parseEvery(args []string) (int64, error) {
	if len(args) == 0 {
		return 0, errors.New("@every: missing duration, such as @every 10s")
	}
	if len(args) > 1 {
		return 0, fmt.Errorf("@every: want one duration, got %q", strings.Join(args, " "))
	}
	d, err := time.ParseDuration(args[0])
	if err != nil {
		return 0, fmt.Errorf("@every: invalid duration %q (use a unit, such as 10s or 1h30m)", args[0])
	}
	switch {
	case d <= 0:
		return 0, fmt.Errorf("@every: duration must be positive, got %s", d)
	case d < time.Second:
		return 0, fmt.Errorf("@every: duration %s is shorter than 1s", d)
	case d%time.Second != 0:
		return 0, fmt.Errorf("@every: duration %s is not a whole number of seconds", d)
	case d > MaxEvery:
		return 0, fmt.Errorf("@every: duration %s is longer than %s (ten years), so its slots would come centuries apart from the epoch they count from; use a cron schedule such as @yearly", d, MaxEvery)
	}
	return int64(d / time.Second), nil
}

// parseFields checks five or six fields with precise messages, has robfig/cron turn them into bit
// sets, classifies the schedule and rejects one that never fires.
func (s *Schedule) parseFields(words []string) error {
	if len(words) != 5 && len(words) != 6 {
		return fmt.Errorf("expected 5 or 6 fields, got %d", len(words))
	}
	if len(words) == 5 {
		words = append([]string{"0"}, words...)
	}
	wild := [6]bool{}
	for i, w := range words {
		var err error
		if wild[i], err = checkField(i, w); err != nil {
			return err
		}
	}
	bits, err := robfigBits(words)
	if err != nil {
		// checkField is stricter than robfig/cron, so this is not expected.
		return fmt.Errorf("parse %q: %w", strings.Join(words, " "), err)
	}
	s.second = bits.Second &^ starBit
	s.minute = bits.Minute &^ starBit
	s.hour = bits.Hour &^ starBit
	s.dom = bits.Dom &^ starBit
	s.month = bits.Month &^ starBit
	s.dow = bits.Dow &^ starBit
	s.domStar = bits.Dom&starBit != 0
	s.dowStar = bits.Dow&starBit != 0
	// cronie's rule, extended to the seconds field: a wildcard in a sub-day time field makes the
	// schedule follow real time; otherwise it follows the wall clock.
	s.kind = kindWall
	if wild[fieldSecond] || wild[fieldMinute] || wild[fieldHour] {
		s.kind = kindReal
	}
	if !s.canFire() {
		return fmt.Errorf("schedule never fires: day-of-month %q never occurs in month %q", words[fieldDom], words[fieldMonth])
	}
	return nil
}

// starBit is the bit robfig/cron sets in a field's bit set when the field is `*` or `?`.
const starBit = 1 << 63

// robfigBits parses six checked fields with robfig/cron, which knows day-of-week 0-6 only: the
// day-of-week field is handed to it with 7 folded onto 0.
func robfigBits(words []string) (*cron.SpecSchedule, error) {
	p := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	words = slices.Clone(words)
	dow, err := foldSunday(words[fieldDow])
	if err != nil {
		return nil, err
	}
	words[fieldDow] = dow
	sched, err := p.Parse(strings.Join(words, " "))
	if err != nil {
		return nil, err
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("unexpected schedule type %T", sched)
	}
	return spec, nil
}

// canFire reports whether some day of some selected month matches. Only a day-of-month restricted
// under `*` day-of-week can rule out every day: otherwise every month has each weekday.
func (s *Schedule) canFire() bool {
	if !s.dowStar {
		return true
	}
	for m := 1; m <= 12; m++ {
		if s.month&(1<<m) == 0 {
			continue
		}
		if s.dom&(uint64(1)<<(maxDaysIn(m)+1)-1) != 0 {
			return true
		}
	}
	return false
}

// maxDaysIn is the length of month m in a leap year.
func maxDaysIn(m int) int {
	switch m {
	case 2:
		return 29
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
