package decode

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestInt_Edges: the floats either side of the largest int, and the strings a variable gives.
func TestInt_Edges(t *testing.T) {
	intType := reflect.TypeFor[int]()
	cases := []struct {
		in   any
		want int
		err  string
	}{
		{math.Nextafter(math.MaxInt64, 0), 9223372036854774784, ""},
		{float64(math.MaxInt64), 0, "is too large"},
		{float64(math.MinInt64), math.MinInt64, ""},
		{math.Nextafter(math.MinInt64, math.Inf(-1)), 0, "is too far below zero"},
		{math.Inf(-1), 0, "is too far below zero"},
		{uint64(math.MaxInt64), math.MaxInt64, ""},
		{uint64(math.MaxInt64) + 1, 0, "is too large"},
		{" 42 ", 42, ""},
		{"9223372036854775807", math.MaxInt64, ""},
		{"9223372036854775808", 0, "is too large"},
		{"-9223372036854775809", 0, "is too far below zero"},
		{"1e3", 1000, ""},
		{"0.5", 0, "must be a whole number, got 0.5"},
		{"1e999", 0, "is too large"},
		{"ten", 0, `"ten" is not a whole number`},
	}
	for _, tc := range cases {
		got, err := Int(reflect.TypeOf(tc.in), intType, tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Int(%v) = %v, %v; want an error %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Int(%v) = %v, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// TestList: entries are trimmed, an empty string is an empty list, an empty entry an error.
func TestList(t *testing.T) {
	if got, err := List(" a , b"); err != nil || !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("List(\" a , b\") = %q, %v", got, err)
	}
	if got, err := List(""); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("List(\"\") = %#v, %v; want an empty list", got, err)
	}
	if _, err := List("a,,b"); err == nil || !strings.Contains(err.Error(), "entry 2 of 3 is empty") {
		t.Fatalf("List(\"a,,b\") err=%v, want entry 2 of 3 is empty", err)
	}
}
