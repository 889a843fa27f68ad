package schedule

import (
	"fmt"
	"strings"
	"time"
)

// Describe words the schedule for a person: "every minute", "at 02:00 every day", "every 10
// seconds", "at 09:30 on weekdays". It knows the common shapes of a cron table, a fixed time
// or a step in one field, with any day restriction it can name; for anything else it returns
// the spec itself, which is never wrong.
func (s *Schedule) Describe() string {
	if s.kind == kindEvery {
		return "every " + words(s.every)
	}
	fields := strings.Fields(s.spec)
	if d, ok := descriptorFields(fields[0]); ok {
		fields = strings.Fields(d)
	}
	if len(fields) == 5 {
		fields = append([]string{"0"}, fields...)
	}
	if len(fields) != 6 {
		return s.spec
	}
	when, subDaily, ok := describeTime(fields[fieldSecond], fields[fieldMinute], fields[fieldHour])
	if !ok {
		return s.spec
	}
	days, ok := describeDays(fields[fieldDom], fields[fieldMonth], fields[fieldDow])
	switch {
	case !ok:
		return s.spec
	case days == "" && subDaily:
		return when
	case days == "":
		return when + " every day"
	case strings.HasPrefix(days, "in ") && !subDaily:
		return when + " every day " + days
	}
	return when + " " + days
}

// words spells a period of seconds: "second", "10 seconds", "90 minutes", "1h30m5s".
func words(sec int64) string {
	unit := func(n int64, one string) string {
		if n == 1 {
			return one
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	switch {
	case sec%86400 == 0:
		return unit(sec/86400, "day")
	case sec%3600 == 0:
		return unit(sec/3600, "hour")
	case sec%60 == 0:
		return unit(sec/60, "minute")
	case sec < 60:
		return unit(sec, "second")
	}
	return (time.Duration(sec) * time.Second).String()
}

// describeTime words the second, minute and hour fields. subDaily is true when they fire more
// than once a day, which then needs no "every day".
func describeTime(sec, min, hour string) (when string, subDaily, ok bool) {
	secV, secFixed := plain(sec, 59)
	minV, minFixed := plain(min, 59)
	hourV, hourFixed := plain(hour, 23)
	// A step that does not divide its field's span leaves a shorter gap at the wrap ("*/7"
	// fires at 56 then 0): "every 7 minutes" would be wrong, so such a step is not worded.
	secStep, secEvery := step(sec, 60)
	minStep, minEvery := step(min, 60)
	hourStep, hourEvery := step(hour, 24)
	switch {
	case hourFixed && minFixed && secFixed:
		if secV != 0 {
			return fmt.Sprintf("at %02d:%02d:%02d", hourV, minV, secV), false, true
		}
		return fmt.Sprintf("at %02d:%02d", hourV, minV), false, true
	case hourFixed && minFixed && secEvery:
		return fmt.Sprintf("every %s from %02d:%02d to %02d:%02d:59", words(int64(secStep)), hourV, minV, hourV, minV), true, true
	case isStar(hour) && isStar(min) && secEvery:
		return "every " + words(int64(secStep)), true, true
	case isStar(hour) && minEvery && secFixed && secV == 0:
		return "every " + words(int64(minStep)*60), true, true
	case isStar(hour) && minFixed && secFixed && secV == 0:
		if minV == 0 {
			return "every hour", true, true
		}
		return fmt.Sprintf("every hour at minute %d", minV), true, true
	case hourEvery && hourStep > 1 && minFixed && secFixed && secV == 0:
		if minV == 0 {
			return fmt.Sprintf("every %d hours", hourStep), true, true
		}
		return fmt.Sprintf("every %d hours at minute %d", hourStep, minV), true, true
	case hourFixed && minEvery && secFixed && secV == 0:
		return fmt.Sprintf("every %s from %02d:00 to %02d:59", words(int64(minStep)*60), hourV, hourV), true, true
	case minFixed && secFixed && secV == 0:
		hours, ok := valueList(hour, 23)
		if !ok {
			return "", false, false
		}
		times := make([]string, len(hours))
		for i, h := range hours {
			times[i] = fmt.Sprintf("%02d:%02d", h, minV)
		}
		return "at " + join(times), false, true
	}
	return "", false, false
}

// describeDays words the day-of-month, month and day-of-week fields: "" for every day.
func describeDays(dom, month, dow string) (string, bool) {
	var parts []string
	switch {
	case isStar(dom) && isStar(dow):
	case isStar(dom):
		d, ok := weekdays(dow)
		if !ok {
			return "", false
		}
		if d != "" {
			parts = append(parts, d)
		}
	case isStar(dow):
		days, ok := valueList(dom, 31)
		if !ok {
			return "", false
		}
		if len(days) == 1 && !isStar(month) {
			if months, ok := monthList(month); ok && len(months) == 1 {
				return fmt.Sprintf("on %d %s", days[0], months[0]), true
			}
		}
		ns := make([]string, len(days))
		for i, d := range days {
			ns[i] = fmt.Sprint(d)
		}
		if len(days) == 1 {
			parts = append(parts, "on day "+ns[0]+" of the month")
		} else {
			parts = append(parts, "on days "+join(ns)+" of the month")
		}
	default:
		return "", false // either may match: too subtle for words
	}
	if !isStar(month) {
		months, ok := monthList(month)
		if !ok {
			return "", false
		}
		parts = append(parts, "in "+join(months))
	}
	return strings.Join(parts, " "), true
}

// weekdays words a day-of-week field: "on Monday", "on weekdays", "on weekends"; "" for
// every day of the week.
func weekdays(dow string) (string, bool) {
	names := [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	days, ok := valueListNamed(dow, fieldDow)
	if !ok {
		return "", false
	}
	set := map[int]bool{}
	for _, d := range days {
		set[d%7] = true // 7 is Sunday too, as in crontab
	}
	switch {
	case len(set) == 7:
		return "", true // every day
	case len(set) == 5 && !set[0] && !set[6]:
		return "on weekdays", true
	case len(set) == 2 && set[0] && set[6]:
		return "on weekends", true
	}
	var out []string
	for d := 1; d <= 7; d++ { // Monday first
		if set[d%7] {
			out = append(out, names[d%7])
		}
	}
	return "on " + join(out), true
}

// monthList words a month field as month names.
func monthList(month string) ([]string, bool) {
	ms, ok := valueListNamed(month, fieldMonth)
	if !ok {
		return nil, false
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		if m < 1 || m > 12 {
			return nil, false
		}
		out[i] = time.Month(m).String()
	}
	return out, true
}

// plain reads a field that is one number no greater than max.
func plain(f string, max int) (int, bool) {
	n, ok := parseDigits(f)
	return n, ok && n <= max
}

// step reads "*/N" (and "*" as a step of 1), N dividing span.
func step(f string, span int) (int, bool) {
	if isStar(f) {
		return 1, true
	}
	rng, st, ok := strings.Cut(f, "/")
	if !ok || !isStar(rng) {
		return 0, false
	}
	n, ok := parseDigits(st)
	return n, ok && n > 0 && span%n == 0
}

func isStar(f string) bool { return f == "*" || f == "?" }

// valueList reads a list of numbers and ranges without steps, such as "1,15" or "9-17".
func valueList(f string, max int) ([]int, bool) {
	return valueListOf(f, func(s string) (int, bool) { return plain(s, max) })
}

// valueListNamed is valueList for a field that also takes names (months, days of the week).
func valueListNamed(f string, field int) ([]int, bool) {
	return valueListOf(f, func(s string) (int, bool) {
		if n, ok := parseDigits(s); ok {
			return n, n <= 12
		}
		return fieldName(field, s)
	})
}

func valueListOf(f string, value func(string) (int, bool)) ([]int, bool) {
	var out []int
	for elem := range strings.SplitSeq(f, ",") {
		lo, hi, isRange := strings.Cut(elem, "-")
		a, ok := value(lo)
		if !ok {
			return nil, false
		}
		b := a
		if isRange {
			if b, ok = value(hi); !ok || b < a {
				return nil, false
			}
		}
		for v := a; v <= b; v++ {
			out = append(out, v)
		}
	}
	return out, len(out) > 0 && len(out) <= 12
}

// join lists words as a person would: "a", "a and b", "a, b and c".
func join(ws []string) string {
	if len(ws) <= 1 {
		return strings.Join(ws, "")
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " and " + ws[len(ws)-1]
}
