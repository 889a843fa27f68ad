package runkey

import "scheduler"

// Slots is a set of slots, each named by its job, its time to the microsecond (as the ledger
// keeps it) and whether it is manual; the zero value is empty, and Add makes it.
type Slots map[slotID]struct{}

type slotID struct {
	job    string
	at     int64
	manual bool
}

func idOf(k scheduler.SlotKey) slotID { return slotID{k.Job, k.At.UnixMicro(), k.Manual} }

// Add puts keys in the set.
func (s *Slots) Add(keys ...scheduler.SlotKey) {
	if *s == nil {
		*s = Slots{}
	}
	for _, k := range keys {
		(*s)[idOf(k)] = struct{}{}
	}
}

// Take removes k from the set and reports whether it was in it.
func (s Slots) Take(k scheduler.SlotKey) bool {
	id := idOf(k)
	_, ok := s[id]
	delete(s, id)
	return ok
}
