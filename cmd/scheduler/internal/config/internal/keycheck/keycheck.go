// Package keycheck refuses the keys of a parsed configuration document that would read
// differently from one load to the next. Keys are read regardless of case, as viper reads them:
// `Schedule:` is `schedule:`. Two keys of one mapping that differ only in case would be one key to
// viper, which keeps whichever it happens to merge last (a different one from one read to the
// next), so they are refused. A key never holds a dot: viper would read `store.schema` as a path
// into `store`, and a job's `history.max_age` would reach no setting at all.
package keycheck

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"scheduler/cmd/scheduler/internal/config/internal/keypath"
)

// jobPathRE matches the key path of a job, whose env and headers mappings hold names rather
// than keys.
var jobPathRE = regexp.MustCompile(`^jobs\[\d+\]$`)

// Problem is one refused key: its key path, lower-case, and why.
type Problem struct {
	Key string
	Msg string
}

// Result is what Check finds in a document. Each key it reports is removed from the document,
// so that the rest decodes the same on every read, as if the key were not there.
type Result struct {
	// Problems holds a problem per key that differs only in case from another of its mapping,
	// and per key that holds a dot, in the order of their key paths.
	Problems []Problem
	// Twins are the key paths, lower-case, of the keys that differed only in case: what is
	// missing under them is missing because they were removed.
	Twins []string
}

// Check walks doc, the file as parsed, and reports, removing them from doc, the keys that differ
// only in case from another key of their mapping and the keys that hold a dot. The names of an
// env mapping (of defaults or of a job) are variables, case-sensitive, which the caller checks;
// an env mapping's and a headers mapping's names may hold a dot.
func Check(doc map[string]any) Result {
	var kp Result
	var walk func(path string, v any, names string) any
	walk = func(path string, v any, names string) any {
		switch t := v.(type) {
		case []any:
			for i, e := range t {
				t[i] = walk(fmt.Sprintf("%s[%d]", path, i), e, "")
			}
		case map[any]any:
			// A mapping with a key that is not a string (1:, true:), which viper reads with each
			// key as fmt prints it: so is it checked.
			return walk(path, kp.stringKeys(path, t), names)
		case map[string]any:
			kp.mapping(path, t, names)
			job := path == "defaults" || jobPathRE.MatchString(path)
			for k, e := range t {
				switch lower := strings.ToLower(k); {
				case job && lower == "env":
					// Variable names: case-sensitive (restoreEnvCase checks them), and a dot in
					// one is the variable's own.
				case job && lower == "headers":
					t[k] = walk(keypath.Join(path, lower), e, lower)
				default:
					switch e.(type) {
					case map[string]any, map[any]any, []any:
						t[k] = walk(keypath.Join(path, lower), e, "")
					}
				}
			}
		}
		return v
	}
	walk("", doc, "")
	// The walk takes each mapping's keys in no order: the problems come out in the order of
	// their keys, the same on every read.
	slices.SortStableFunc(kp.Problems, func(a, b Problem) int { return strings.Compare(a.Key, b.Key) })
	return kp
}

// stringKeys is m with each key as fmt prints it, as viper reads it. Two keys that print alike
// (1 and "1") are reported, and left out.
func (kp *Result) stringKeys(path string, m map[any]any) map[string]any {
	out := make(map[string]any, len(m))
	twice := map[string]bool{}
	for k, v := range m {
		s := fmt.Sprint(k)
		if _, dup := out[s]; dup {
			twice[s] = true
		}
		out[s] = v
	}
	for _, s := range slices.Sorted(maps.Keys(twice)) {
		delete(out, s)
		kp.Twins = append(kp.Twins, keypath.Join(path, strings.ToLower(s)))
		kp.Problems = append(kp.Problems, Problem{Key: keypath.Join(path, strings.ToLower(s)),
			Msg: fmt.Sprintf("%q is set twice, as a string and as another value that reads the same; keep one of them", s)})
	}
	return out
}

// mapping checks the keys of the mapping m at path; names is "headers" when they are the
// header names of an http job.
func (kp *Result) mapping(path string, m map[string]any, names string) {
	for k := range m {
		if strings.ToLower(k) != k { // else every key is in lower case, and none has a twin
			kp.twinKeys(path, m, names)
			break
		}
	}
	if names == "headers" {
		return // a header name may hold a dot
	}
	var dotted []string
	for k := range m {
		if strings.Contains(k, ".") {
			dotted = append(dotted, k)
		}
	}
	slices.Sort(dotted)
	for _, k := range dotted {
		delete(m, k)
		kp.Problems = append(kp.Problems, Problem{Key: keypath.Join(path, strings.ToLower(k)),
			Msg: fmt.Sprintf("%q is one key, not a path, and no key holds a dot: write %s", k, nested(k))})
	}
}

// twinKeys reports and removes the keys of m, at path, that differ only in case from another.
func (kp *Result) twinKeys(path string, m map[string]any, names string) {
	byLower := map[string][]string{}
	for k := range m {
		lower := strings.ToLower(k)
		byLower[lower] = append(byLower[lower], k)
	}
	for _, lower := range slices.Sorted(maps.Keys(byLower)) {
		spelled := byLower[lower]
		if len(spelled) < 2 {
			continue
		}
		slices.Sort(spelled)
		why := "keys are read regardless of case, so only one of them would count, and not always the same one"
		if names == "headers" {
			why = "HTTP header names are case-insensitive, so only one of them would be sent"
		}
		for _, k := range spelled {
			delete(m, k)
		}
		kp.Twins = append(kp.Twins, keypath.Join(path, lower))
		kp.Problems = append(kp.Problems, Problem{Key: keypath.Join(path, lower),
			Msg: fmt.Sprintf("%s differ only in case: %s; keep one of them", quoteAll(spelled), why)})
	}
}

// nested is the dotted key k written as the nested mappings it stands for: history.max_age is
// `history: {max_age: ...}`.
func nested(k string) string {
	parts := strings.Split(k, ".")
	s := "..."
	for i := len(parts) - 1; i >= 0; i-- {
		if i == len(parts)-1 {
			s = parts[i] + ": " + s
		} else {
			s = parts[i] + ": {" + s + "}"
		}
	}
	return s
}

// quoteAll is names quoted and joined with "and".
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) <= 2 {
		return strings.Join(q, " and ")
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
