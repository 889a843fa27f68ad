package runkey

import (
	"testing"
	"time"

	"scheduler"
)

// TestSlots: a slot is in the set once added, whatever its time's location or monotonic
// reading, until taken; a manual slot at the same time is another slot, and so is another job's.
func TestSlots(t *testing.T) {
	at := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	var s Slots
	if s.Take(scheduler.SlotKey{Job: "a", At: at}) {
		t.Fatal("the empty set took a slot")
	}
	now := time.Now()
	monotonic := now.Add(at.Sub(now)) // at, with a monotonic reading
	s.Add(scheduler.SlotKey{Job: "a", At: monotonic}, scheduler.SlotKey{Job: "b", At: at, Manual: true})
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []scheduler.SlotKey{{Job: "a", At: at, Manual: true}, {Job: "b", At: at}, {Job: "c", At: at}} {
		if s.Take(k) {
			t.Errorf("took %+v, which was not added", k)
		}
	}
	if !s.Take(scheduler.SlotKey{Job: "a", At: at.In(berlin)}) {
		t.Error("slot a, added, was not taken")
	}
	if s.Take(scheduler.SlotKey{Job: "a", At: at}) {
		t.Error("slot a taken twice")
	}
	if !s.Take(scheduler.SlotKey{Job: "b", At: at, Manual: true}) {
		t.Error("the manual slot of b was not taken")
	}
}
