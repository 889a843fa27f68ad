package status

import (
	"fmt"
	"time"
)

// Slot is one of a job's next slots as the console shows it.
type Slot struct {
	// At is when the slot fires, in the job's zone: its JSON carries the UTC offset.
	At time.Time `json:"at"`
	// Zone is the zone's abbreviation at At, such as CET or CEST.
	Zone string `json:"zone"`
	// Adjusted is set when a DST change moved the slot: Nominal, the wall-clock time the
	// schedule names, did not exist that day.
	Adjusted bool   `json:"adjusted"`
	Nominal  string `json:"nominal,omitempty"`
	// DST says how a DST change touches the slot: moved, or its UTC offset differs from the
	// slot before it (or, for the first, from the offset now), so slots of the schedule may
	// have been skipped or repeated in between. Empty when none does.
	DST string `json:"dst,omitempty"`
}

// markDST marks the slots a DST change touches, the first compared with the offset at now.
// The slots are in their job's zone, oldest first.
func markDST(now time.Time, slots []Slot) []Slot {
	if len(slots) == 0 {
		return slots
	}
	loc := slots[0].At.Location()
	_, prev := now.In(loc).Zone()
	for i := range slots {
		s := &slots[i]
		var off int
		s.Zone, off = s.At.Zone()
		switch {
		case s.Adjusted:
			s.DST = fmt.Sprintf("moved by a DST change: %s does not exist in %s, so it runs at the first instant after", s.Nominal, loc)
		case off != prev:
			s.DST = fmt.Sprintf("UTC offset changes from %s to %s (DST)", offset(prev), offset(off))
		}
		if !s.Adjusted {
			s.Nominal = ""
		}
		prev = off
	}
	return slots
}

// offset formats a UTC offset in seconds as +01:00.
func offset(sec int) string {
	sign := '+'
	if sec < 0 {
		sign, sec = '-', -sec
	}
	return fmt.Sprintf("%c%02d:%02d", sign, sec/3600, sec%3600/60)
}
