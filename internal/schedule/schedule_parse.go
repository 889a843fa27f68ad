package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Indexes of the six fields of a spec, seconds first as robfig/cron orders them.
const (
	fieldSecond = iota
	fieldMinute
	fieldHour
	fieldDom
	fieldMonth
	fieldDow
)

// specField describes one field of a cron spec: its name in error messages and its bounds.
type specField struct {
	name     string
	min, max int
}

func fieldOf(i int) specField {
	switch i {
	case fieldSecond:
		return specField{"second", 0, 59}
	case fieldMinute:
		return specField{"minute", 0, 59}
	case fieldHour:
		return specField{"hour", 0, 23}
	case fieldDom:
		return specField{"day-of-month", 1, 31}
	case fieldMonth:
		return specField{"month", 1, 12}
	default:
		// 7 is Sunday too, as in crontab and cronie; robfigBits folds it onto 0.
		return specField{"day-of-week", 0, 7}
	}
}

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

// checkField validates field i of a spec and reports whether it holds a wildcard element.
func checkField(i int, text string) (bool, error) {
	f := fieldOf(i)
	wild := false
	for elem := range strings.SplitSeq(text, ",") {
		if elem == "" {
			return false, fmt.Errorf("%s field: empty list element in %q", f.name, text)
		}
		rng, step, hasStep := strings.Cut(elem, "/")
		if hasStep {
			if strings.Contains(step, "/") {
				return false, fmt.Errorf("%s field: too many slashes in %q", f.name, elem)
			}
			n, ok := parseDigits(step)
			span := f.max - f.min + 1
			if !ok {
				return false, fmt.Errorf("%s field: invalid step %q in %q", f.name, step, elem)
			}
			if n < 1 || n > span {
				return false, fmt.Errorf("%s field: step %d out of range [1, %d]", f.name, n, span)
			}
		}
		if rng == "*" || rng == "?" {
			wild = true
			continue
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		a, err := fieldValue(i, lo, elem)
		if err != nil {
			return false, err
		}
		if !isRange {
			continue
		}
		if strings.Contains(hi, "-") {
			return false, fmt.Errorf("%s field: too many hyphens in %q", f.name, elem)
		}
		b, err := fieldValue(i, hi, elem)
		if err != nil {
			return false, err
		}
		if a > b {
			return false, fmt.Errorf("%s field: range %q runs backwards (%d > %d)", f.name, rng, a, b)
		}
	}
	return wild, nil
}

// fieldValue reads one value of field i: a number, or a name for months and days of the week.
func fieldValue(i int, s, elem string) (int, error) {
	f := fieldOf(i)
	if n, ok := parseDigits(s); ok || isDigits(s) {
		if !ok || n < f.min || n > f.max {
			return 0, fmt.Errorf("%s field: value %s out of range [%d, %d]", f.name, s, f.min, f.max)
		}
		return n, nil
	}
	if n, ok := fieldName(i, s); ok {
		return n, nil
	}
	in := ""
	if s != elem {
		in = fmt.Sprintf(" in %q", elem)
	}
	switch i {
	case fieldMonth:
		return 0, fmt.Errorf("%s field: invalid value %q%s (want 1-12 or jan-dec)", f.name, s, in)
	case fieldDow:
		return 0, fmt.Errorf("%s field: invalid value %q%s (want 0-7 or sun-sat)", f.name, s, in)
	}
	return 0, fmt.Errorf("%s field: invalid value %q%s (want %d-%d)", f.name, s, in, f.min, f.max)
}

// fieldName maps a month or day-of-week name (ASCII, any case) to its value.
func fieldName(i int, s string) (int, bool) {
	if len(s) != 3 {
		return 0, false
	}
	var b [3]byte
	for k := 0; k < 3; k++ {
		c := s[k]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[k] = c
	}
	name := string(b[:])
	switch i {
	case fieldMonth:
		months := [...]string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
		for k, m := range months {
			if m == name {
				return k + 1, true
			}
		}
	case fieldDow:
		days := [...]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
		for k, d := range days {
			if d == name {
				return k, true
			}
		}
	}
	return 0, false
}

// parseDigits reads a non-empty string of ASCII digits; ok is false for anything else or overflow.
func parseDigits(s string) (int, bool) {
	if !isDigits(s) {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for k := 0; k < len(s); k++ {
		if s[k] < '0' || s[k] > '9' {
			return false
		}
	}
	return true
}

// foldSunday rewrites a checked day-of-week field, of values 0-7, into one robfig/cron reads
// the same way cronie does: every element that names 7, by a range (5-7), a step that reaches
// it (1-7/2, 1/2) or itself, becomes the list of days it selects, with Sunday as 0. A bare
// wildcard (*, ?, */1) stays as it is, as robfig/cron marks it for the day-of-month rule; a
// stepped one (*/2) selects the same days from 0-6 as from 0-7, as 7 is reached only when
// 0 is.
func foldSunday(field string) (string, error) {
	f := fieldOf(fieldDow)
	out := make([]string, 0, 1)
	for elem := range strings.SplitSeq(field, ",") {
		rng, stepText, hasStep := strings.Cut(elem, "/")
		if rng == "*" || rng == "?" {
			out = append(out, elem)
			continue
		}
		step := 1
		if hasStep {
			n, ok := parseDigits(stepText)
			if !ok || n < 1 {
				return "", fmt.Errorf("%s field: invalid step %q in %q", f.name, stepText, elem)
			}
			step = n
		}
		loText, hiText, isRange := strings.Cut(rng, "-")
		lo, err := fieldValue(fieldDow, loText, elem)
		if err != nil {
			return "", err
		}
		hi := lo
		switch {
		case isRange:
			if hi, err = fieldValue(fieldDow, hiText, elem); err != nil {
				return "", err
			}
		case hasStep: // v/step means v-max/step
			hi = f.max
		}
		var days []string
		seen := [7]bool{}
		for d := lo; d <= hi; d += step {
			if day := d % 7; !seen[day] {
				seen[day] = true
				days = append(days, strconv.Itoa(day))
			}
		}
		out = append(out, days...)
	}
	return strings.Join(out, ","), nil
}
