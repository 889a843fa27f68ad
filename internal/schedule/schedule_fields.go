package schedule

import (
	"fmt"
	"strconv"
	"strings"
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
