package runkey

import (
	"slices"
	"testing"
	"time"

	"scheduler"
)

func TestStarts_Reset(t *testing.T) {
	var s Starts
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	const step = 100
	for i := range step {
		s.Add(scheduler.Run{RunID: int64(i + 1), Job: "j", ScheduledAt: at})
	}
	if got := s.Runs(); len(got) != step || got[0].RunID != 1 || got[step-1].RunID != step {
		t.Fatalf("runs=%d, want %d in order", len(got), step)
	}
	kept := s.Runs()[:1]
	s.Reset()
	if len(s.Runs()) != 0 || cap(s.Runs()) != cap(kept) {
		t.Fatalf("after a step of %d runs: len=%d cap=%d, want the buffer kept, empty", step, len(s.Runs()), cap(s.Runs()))
	}
	if kept[0] != (Started{}) {
		t.Fatalf("a reset buffer still holds %+v", kept[0])
	}
	for i := range maxKept + 1 {
		s.Add(scheduler.Run{RunID: int64(i + 1), Job: "j", ScheduledAt: at})
	}
	s.Reset()
	if cap(s.Runs()) != 0 {
		t.Fatalf("after a herd of %d runs cap=%d, want the buffer let go", maxKept+1, cap(s.Runs()))
	}
}

// TestClaimedAhead: of the runs started, those claimed ahead (attempt 0) are the ones whose start
// is recorded, in order.
func TestClaimedAhead(t *testing.T) {
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	got := ClaimedAhead([]Started{{RunID: 1, Job: "a", Slot: at}, {RunID: 2, Job: "b", Slot: at, Attempt: 1},
		{RunID: 3, Job: "c", Slot: at, Attempt: 0}, {RunID: 4, Job: "d", Slot: at, Attempt: 2}})
	want := []scheduler.RunRef{{RunID: 1, Job: "a"}, {RunID: 3, Job: "c"}}
	if !slices.Equal(got, want) {
		t.Fatalf("ClaimedAhead = %v, want %v", got, want)
	}
	if got := ClaimedAhead(nil); got != nil {
		t.Fatalf("ClaimedAhead(nil) = %v, want none", got)
	}
}
