package overlap

import "testing"

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name   string
		slot   Slot
		act    Action
		reason string
	}{
		{"Free", Slot{Policy: Skip}, Run, ""},
		{"AllowRunning", Slot{Policy: Allow, Active: 1}, Run, ""},
		{"QueueRunning", Slot{Policy: Queue, Active: 1}, Queued, ""},
		{"ReplaceStarting", Slot{Policy: Replace, Starting: 1}, Replacing, ""},
		{"SkipRunning", Slot{Policy: Skip, Active: 1}, Skipped, ReasonRunning},
		{"SkipRunningHeld", Slot{Policy: Skip, Active: 1, Held: true}, Skipped, ReasonHeld},
		{"SkipRunningBacklog", Slot{Policy: Skip, Active: 1, Held: true, HeldStarts: true}, Skipped, ReasonBacklog},
		{"SkipStarting", Slot{Policy: Skip, Starting: 1}, Behind, ReasonSameTime},
		{"SkipStartingHeld", Slot{Policy: Skip, Starting: 1, Held: true}, Behind, ReasonHeld},
		{"SkipStartingBacklog", Slot{Policy: Skip, Starting: 1, HeldStarts: true}, Behind, ReasonBacklog},
		{"SkipStartingWithRun", Slot{Policy: Skip, Starting: 1, HasRun: true}, Skipped, ReasonSameTime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if act, reason := Decide(tc.slot); act != tc.act || reason != tc.reason {
				t.Fatalf("Decide(%+v) = %d, %q; want %d, %q", tc.slot, act, reason, tc.act, tc.reason)
			}
		})
	}
}
