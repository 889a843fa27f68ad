package notices

import (
	"testing"
	"time"

	"scheduler"
)

// TestTerm_CaughtUp: every missed slot has its notice, and so has each closed orphan, with the
// orphan's slot and the term that writes it.
func TestTerm_CaughtUp(t *testing.T) {
	slot := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	var got []scheduler.Run
	notify := func(r scheduler.Run) *scheduler.Notice { got = append(got, r); return &scheduler.Notice{} }
	missed := []scheduler.Outcome{{Slot: scheduler.SlotKey{Job: "a", At: slot}, Status: scheduler.StatusMissed}}
	closes := []scheduler.Completion{{RunID: 7, Job: "a", Status: scheduler.StatusFailed, Attempt: 2}, {RunID: 8, Job: "a"}}
	orphans := []scheduler.Run{{RunID: 7, Job: "a", ScheduledAt: slot.Add(time.Minute)}}
	Term{Token: 9, Node: "n1"}.CaughtUp(notify, missed, closes, orphans)
	if missed[0].Notice == nil || closes[0].Notice == nil || closes[1].Notice != nil || len(got) != 2 {
		t.Fatalf("missed %+v closes %+v: want the missed slot and the closed orphan notified, only", missed, closes)
	}
	if r := got[1]; r.RunID != 7 || !r.ScheduledAt.Equal(slot.Add(time.Minute)) || r.Token != 9 || r.Node != "n1" || r.Attempt != 2 {
		t.Fatalf("the orphan's notice reports %+v", r)
	}
	Term{}.CaughtUp(nil, missed, closes, orphans) // no Notify: nothing to do
}
