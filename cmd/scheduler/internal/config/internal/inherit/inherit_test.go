package inherit

import (
	"maps"
	"reflect"
	"testing"
)

func TestMerger_Merge(t *testing.T) {
	defaults := map[string]any{
		"timeout": "1h", "retries": 0, "bogus": 1,
		"history": map[string]any{"max_runs": 10, "max_age": "24h"},
	}
	known := map[string]bool{"timeout": true, "retries": true, "history": true}
	m := New(defaults, known)

	a := map[string]any{"name": "a"}
	b := map[string]any{"name": "b"}
	c := map[string]any{"name": "c", "retries": 3, "history": map[string]any{"max_runs": 5}}
	sa, sb, sc := m.Merge(a), m.Merge(b), m.Merge(c)

	if want := map[string]bool{"timeout": true, "retries": true, "history.max_runs": true, "history.max_age": true}; !maps.Equal(sa, want) {
		t.Fatalf("a inherited %v, want %v", sa, want)
	}
	if reflect.ValueOf(sa).UnsafePointer() != reflect.ValueOf(sb).UnsafePointer() {
		t.Fatal("a and b inherited the same keys and keep a set each")
	}
	if want := map[string]bool{"timeout": true, "history.max_age": true}; !maps.Equal(sc, want) {
		t.Fatalf("c inherited %v, want %v", sc, want)
	}
	if a["timeout"] != "1h" || a["bogus"] != nil || c["retries"] != 3 {
		t.Fatalf("merged a=%v c=%v", a, c)
	}
	if h := c["history"].(map[string]any); h["max_runs"] != 5 || h["max_age"] != "24h" {
		t.Fatalf("c's history %v, want its own max_runs and the default max_age", h)
	}
	if m.Merge(nil) != nil || m.Merge("a string") != nil {
		t.Fatal("an item that is not a mapping inherited keys")
	}
	ah := a["history"].(map[string]any)
	ah["max_runs"] = 99
	if defaults["history"].(map[string]any)["max_runs"] != 10 {
		t.Fatal("a job's inherited block is the defaults' own mapping")
	}
}

// TestMerger_EmptyValueIsUnset: a job's key given no value (YAML's null) takes the default, as
// a key it leaves out does, in a block too.
func TestMerger_EmptyValueIsUnset(t *testing.T) {
	defaults := map[string]any{"enabled": true, "catchup": "1h", "history": map[string]any{"max_runs": 10, "max_age": "24h"}}
	m := New(defaults, map[string]bool{"enabled": true, "catchup": true, "history": true})
	job := map[string]any{"name": "a", "enabled": nil, "catchup": "5m", "history": map[string]any{"max_runs": nil, "max_age": "1h"}}
	got := m.Merge(job)
	if want := map[string]bool{"enabled": true, "history.max_runs": true}; !maps.Equal(got, want) {
		t.Fatalf("inherited %v, want %v", got, want)
	}
	if h := job["history"].(map[string]any); job["enabled"] != true || job["catchup"] != "5m" || h["max_runs"] != 10 || h["max_age"] != "1h" {
		t.Fatalf("merged %v", job)
	}
}
