package runkey

import (
	"errors"
	"strings"
	"testing"
	"time"

	"scheduler"
)

// TestReclaimed: each orphan gets the run the ledger took over, or the reason it did not: the
// call's error, a run no longer an orphan, or an answer of the wrong length for all.
func TestReclaimed(t *testing.T) {
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	orphans := []scheduler.Run{{RunID: 1, Job: "a", ScheduledAt: at}, {RunID: 2, Job: "b", ScheduledAt: at}}
	if keys := Keys(orphans); len(keys) != 2 || keys[1] != orphans[1].Key() {
		t.Fatalf("Keys = %v", keys)
	}
	got := []scheduler.Result{{Run: scheduler.Run{RunID: 1, Job: "a", Attempt: 2}, Written: true}, {Run: scheduler.Run{RunID: 2, Job: "b"}}}
	runs, errs := make([]scheduler.Run, 2), make([]error, 2)
	Reclaimed(orphans, got, nil, runs, errs)
	if errs[0] != nil || runs[0].Attempt != 2 {
		t.Fatalf("orphan 1: run %+v, err %v; want taken over", runs[0], errs[0])
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "no longer an orphan") {
		t.Fatalf("orphan 2: err %v, want no longer an orphan", errs[1])
	}
	down := errors.New("store down")
	runs, errs = make([]scheduler.Run, 2), make([]error, 2)
	Reclaimed(orphans, nil, down, runs, errs)
	if !errors.Is(errs[0], down) || !errors.Is(errs[1], down) {
		t.Fatalf("errs %v, want the call's error for each", errs)
	}
	runs, errs = make([]scheduler.Run, 2), make([]error, 2)
	Reclaimed(orphans, got[:1], nil, runs, errs)
	if errs[0] == nil || errs[1] == nil || !strings.Contains(errs[0].Error(), "1 takeovers for 2 runs") {
		t.Fatalf("errs %v, want a short answer refused for each", errs)
	}
}
