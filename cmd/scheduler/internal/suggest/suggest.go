// Package suggest finds what a mistyped name was meant to be: the "did you mean" of the command
// line's flags and job names and of the configuration's keys and variables (cobra suggests the
// commands).
package suggest

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Nearest returns the candidate nearest to name if it lies within a typo's distance (two edits,
// more for a long name), or "".
func Nearest(name string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := distance(name, c)
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(2, len(name)/6) {
		return ""
	}
	return best
}

// DidYouMean is `; did you mean "X"?` with X the candidate nearest to name, or "" when none
// is near: the end of a message about name.
func DidYouMean(name string, candidates []string) string {
	if near := Nearest(name, candidates); near != "" {
		return fmt.Sprintf("; did you mean %q?", near)
	}
	return ""
}

// Flag returns the flag of cmd, its own or inherited, nearest to name, or "".
func Flag(cmd *cobra.Command, name string) string {
	var names []string
	add := func(f *pflag.Flag) { names = append(names, f.Name) }
	cmd.Flags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	return Nearest(name, names)
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// KeysAt returns the keys that the struct type t, decoded by mapstructure, accepts under the
// key path parent (jobs[1], etcd.tls; "" for its own keys), squashed fields included; nil where
// any key goes (a map) or the path is not t's.
func KeysAt(t reflect.Type, parent string) []string {
	if parent != "" {
		for _, seg := range strings.Split(parent, ".") {
			name, _, _ := strings.Cut(seg, "[")
			f, ok := fieldByKey(t, name)
			if !ok {
				return nil
			}
			t = f.Type
			for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
		}
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("mapstructure"), ",")
		switch {
		case opts == "squash":
			keys = append(keys, KeysAt(t.Field(i).Type, "")...)
		case name != "" && name != "-":
			keys = append(keys, name)
		}
	}
	return keys
}

// fieldByKey finds the field of struct type t whose key is key, in its squashed fields too.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if opts == "squash" {
			if sf, ok := fieldByKey(f.Type, key); ok {
				return sf, true
			}
		} else if name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
