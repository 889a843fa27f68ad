package suggest

import (
	"reflect"
	"slices"
	"testing"
)

func TestNearest(t *testing.T) {
	for _, tc := range []struct {
		name       string
		candidates []string
		want       string
	}{
		{"stauts", []string{"status", "history", "next"}, "status"},
		{"jsn", []string{"json", "limit"}, "json"},
		{"retires", []string{"retries", "retry_backoff"}, "retries"},
		{"frobnicate", []string{"status", "history"}, ""},
		{"x", nil, ""},
		{"SCHEDULER_STORE_DNS", []string{"SCHEDULER_STORE_DSN", "SCHEDULER_STORE_SCHEMA"}, "SCHEDULER_STORE_DSN"},
		{"job-0001", []string{"job-0001x", "job-0002"}, "job-0001x"}, // the first of the nearest
	} {
		if got := Nearest(tc.name, tc.candidates); got != tc.want {
			t.Errorf("Nearest(%q, %q)=%q, want %q", tc.name, tc.candidates, got, tc.want)
		}
	}
	if got := DidYouMean("stauts", []string{"status"}); got != `; did you mean "status"?` {
		t.Errorf("DidYouMean=%q", got)
	}
	if got := DidYouMean("zzz", []string{"status"}); got != "" {
		t.Errorf("DidYouMean=%q, want empty", got)
	}
}

type inner struct {
	CAFile string `mapstructure:"ca_file"`
}

type spec struct {
	Schedule string            `mapstructure:"schedule"`
	Env      map[string]string `mapstructure:"env"`
	TLS      inner             `mapstructure:"tls"`
}

type job struct {
	Name string `mapstructure:"name"`
	spec `mapstructure:",squash"`
}

type top struct {
	Node     string `mapstructure:"node"`
	Defaults spec   `mapstructure:"defaults"`
	Jobs     []job  `mapstructure:"jobs"`
}

func TestKeysAt(t *testing.T) {
	typ := reflect.TypeFor[top]()
	for path, want := range map[string][]string{
		"":             {"node", "defaults", "jobs"},
		"defaults":     {"schedule", "env", "tls"},
		"jobs[3]":      {"name", "schedule", "env", "tls"},
		"jobs[0].tls":  {"ca_file"},
		"defaults.env": nil,
		"nope":         nil,
		"node":         nil,
	} {
		if got := KeysAt(typ, path); !slices.Equal(got, want) {
			t.Errorf("KeysAt(%q)=%q, want %q", path, got, want)
		}
	}
}
