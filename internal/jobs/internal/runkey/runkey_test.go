package runkey

import (
	"testing"
	"time"

	"scheduler"
)

func TestClaim_Run(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 29, 2, 30, 0, 0, time.UTC)
	r := scheduler.Run{RunID: 7, Job: "nightly", ScheduledAt: at, Manual: true, Status: scheduler.StatusRunning, Token: 42, Attempt: 2}
	slot := scheduler.SlotKey{Job: "nightly", At: at.In(berlin), Manual: true}
	got := ClaimOf(r).Run(slot)
	if got != r {
		t.Fatalf("run=%+v, want %+v", got, r)
	}
	if got.ScheduledAt.Location() != time.UTC {
		t.Fatalf("scheduled at %v, want the ledger's answer in UTC, not the slot's zone", got.ScheduledAt)
	}
}

func TestStartedOf(t *testing.T) {
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	got := StartedOf(scheduler.Run{RunID: 7, Job: "nightly", ScheduledAt: at, Status: scheduler.StatusRunning, Token: 42, Node: "n1"})
	if want := (Started{RunID: 7, Job: "nightly", Slot: at}); got != want {
		t.Fatalf("started=%+v, want %+v", got, want)
	}
}
