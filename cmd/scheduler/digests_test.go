package main

import (
	"reflect"
	"testing"

	"scheduler/cmd/scheduler/internal/config"
)

func TestJobDigests_OncePerTable(t *testing.T) {
	var c jobDigests
	a := []config.Job{{Name: "a"}, {Name: "b"}}
	first := c.of(a, "h1")
	if len(first) != 2 || first["a"] != config.JobDigest(a[0]) || first["a"] == first["b"] {
		t.Fatalf("digests %v, want one per job", first)
	}
	if again := c.of(a, "h1"); reflect.ValueOf(again).Pointer() != reflect.ValueOf(first).Pointer() {
		t.Error("the same table's digests were computed again")
	}
	b := []config.Job{{Name: "c"}}
	if next := c.of(b, "h2"); len(next) != 1 || next["c"] != config.JobDigest(b[0]) {
		t.Errorf("digests after the table changed: %v", next)
	}
}
