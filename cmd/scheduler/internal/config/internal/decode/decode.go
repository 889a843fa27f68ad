// Package decode turns the values a YAML file and the SCHEDULER_* environment give into the
// configuration's types: durations with a unit, whole numbers that fit, booleans, and the lists
// a variable spells as one comma-separated string. The file and the environment go through the
// same checks, so a value one of them refuses the other refuses too.
package decode

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
)

var durationType = reflect.TypeFor[time.Duration]()

// durationSyntax is the form time.ParseDuration reads. A string of that form it refuses is out
// of range: its error says "invalid duration" either way, which misstates the problem.
var durationSyntax = regexp.MustCompile(`^[-+]?((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$`)

// longest is the longest duration there is, as a user writes one.
var longest = time.Duration(math.MaxInt64).Truncate(time.Second)

// Duration is a decode hook that parses duration strings and refuses bare numbers, which would
// otherwise be read as nanoseconds: "timeout: 30" is almost certainly not 30ns.
func Duration(f, t reflect.Type, data any) (any, error) {
	if t != durationType {
		return data, nil
	}
	switch f.Kind() {
	case reflect.String:
		s := strings.TrimSpace(data.(string))
		d, err := time.ParseDuration(s)
		switch {
		case err == nil:
			return d, nil
		case durationSyntax.MatchString(s):
			return nil, fmt.Errorf("%q is too long: a duration is at most %s", s, longest)
		}
		return nil, fmt.Errorf("%q is not a duration (use a unit, such as 30s, 5m or 2h)", s)
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64, reflect.Uint64:
		if reflect.ValueOf(data).IsZero() {
			return time.Duration(0), nil
		}
		return nil, fmt.Errorf("%v has no unit (use a duration such as 30s, 5m or 2h)", data)
	}
	return data, nil
}

// Int is a decode hook for whole numbers. YAML gives an int, or a uint64 or a float64 for what
// an int cannot hold or what has a fraction; a variable gives a string. Each is refused the
// same way when it has a fraction or does not fit, where a plain conversion would truncate
// 2.9 to 2 and wrap a number past the largest to the most negative.
func Int(f, t reflect.Type, data any) (any, error) {
	if t.Kind() != reflect.Int {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		s := strings.TrimSpace(v)
		n, err := strconv.ParseInt(s, 10, 0)
		switch {
		case err == nil:
			return int(n), nil
		case errors.Is(err, strconv.ErrRange) && n < 0:
			return nil, fmt.Errorf("is too far below zero, got %s", s)
		case errors.Is(err, strconv.ErrRange):
			return nil, fmt.Errorf("is too large, got %s", s)
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("%q is not a whole number", s)
		}
		return whole(x, s)
	case uint64:
		if v > math.MaxInt {
			return nil, fmt.Errorf("is too large, got %d", v)
		}
		return int(v), nil
	case float64:
		return whole(v, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return data, nil
}

// whole is x as an int, or why it is none; spelled is x as the user wrote it.
func whole(x float64, spelled string) (int, error) {
	switch {
	case math.IsNaN(x) || (!math.IsInf(x, 0) && x != math.Trunc(x)):
		return 0, fmt.Errorf("must be a whole number, got %s", spelled)
	case x >= math.MaxInt: // math.MaxInt, as a float64, rounds up past itself
		return 0, fmt.Errorf("is too large, got %s", spelled)
	case x < math.MinInt:
		return 0, fmt.Errorf("is too far below zero, got %s", spelled)
	}
	return int(x), nil
}

// Bool is a decode hook for the booleans a variable spells as strings.
func Bool(f, t reflect.Type, data any) (any, error) {
	if f.Kind() != reflect.String || t.Kind() != reflect.Bool {
		return data, nil
	}
	s := strings.TrimSpace(data.(string))
	b, err := strconv.ParseBool(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not true or false", s)
	}
	return b, nil
}

// List splits a variable's comma-separated list into its entries, trimmed. An empty string is
// an empty list; an empty entry (two commas in a row, a comma at either end, an entry of blanks
// only) is an error rather than dropped, since what it leaves out is likely what was meant.
func List(s string) ([]string, error) {
	out := []string{}
	if s == "" {
		return out, nil
	}
	parts := strings.Split(s, ",")
	for i, part := range parts {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("entry %d of %d is empty: separate the entries with single commas, none of them blank", i+1, len(parts))
		}
		out = append(out, part)
	}
	return out, nil
}

// Message is what the decoder's err says of a value, in the words of a configuration: "must
// be a list, not the string \"x\"" rather than Go's type names.
func Message(err error) string {
	var ut *mapstructure.UnconvertibleTypeError
	if errors.As(err, &ut) {
		return fmt.Sprintf("must be %s, not %s", kindName(ut.Expected.Type()), ValueKind(ut.Value))
	}
	return err.Error()
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Int:
		return "a whole number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	if t == durationType {
		return "a duration"
	}
	return t.String()
}

// ValueKind names what a decoded value is, for a message that says what was given instead.
func ValueKind(v any) string {
	switch v.(type) {
	case nil:
		return "empty"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	case string:
		return fmt.Sprintf("the string %q", v)
	case bool:
		return fmt.Sprintf("%v", v)
	}
	return fmt.Sprintf("%v", v)
}
