package refusal

import "time"

// How often a blocked job's fence is raised again: at its slots, but at least every
// BlockedRetry and at most every MinBlockedRetry.
const (
	BlockedRetry    = 30 * time.Second
	MinBlockedRetry = time.Second
)

// NextRaise is when a blocked job's fence is raised again after now: at slot, the fire time of
// the job's next slot (zero: none), but within BlockedRetry and not before MinBlockedRetry.
func NextRaise(now, slot time.Time) time.Time {
	at := now.Add(BlockedRetry)
	if !slot.IsZero() && slot.Before(at) {
		at = slot
	}
	if soonest := now.Add(MinBlockedRetry); at.Before(soonest) {
		return soonest
	}
	return at
}
