// Package overlap decides, by a job's overlap policy, what becomes of a slot of the job that is
// due while another run of the job is in progress or starting with it. It is pure: the runner
// tells it what it knows of the slot and the job, and applies the answer.
package overlap

// Policy says what happens when a job's slot is due while an earlier run of it still runs.
type Policy string

// The policies.
const (
	Skip    Policy = "skip"    // record the new slot skipped
	Queue   Policy = "queue"   // run the new slot after the current run
	Replace Policy = "replace" // cancel the current run, then run the new slot
	Allow   Policy = "allow"   // run both at once
)

// Reasons recorded for the slots Skip skips.
const (
	ReasonRunning = "overlap: the previous run is still running"
	ReasonHeld    = "overlap: another run of the job started while this slot's claim waited for the store"
	// A backlog (slots whose claims waited for the store) fires when the store is back: one of
	// its slots runs and the others are skipped, or all of them when a run started since they
	// fired is in their way.
	ReasonBacklog  = "overlap: another slot of the same backlog runs (their claims waited for the store)"
	ReasonSameTime = "overlap: another slot of the job due at the same time runs"
)

// Action is what becomes of a due slot.
type Action uint8

// The actions.
const (
	Run       Action = iota // start it
	Skipped                 // record it skipped (close its run skipped, if it has one)
	Behind                  // skipped for a slot starting with it: recorded once that slot's claim landed
	Queued                  // run it after the runs in its way
	Replacing               // cancel the runs in progress, then start it
)

// Slot is what Decide reads of a due slot and its job.
type Slot struct {
	Policy   Policy
	Active   int  // runs of the job in progress
	Starting int  // runs of the job starting with this slot, before it
	HasRun   bool // the slot has a run of its own already: claimed ahead, or an older leader's
	// Held: the slot's claim failed when it fired and waited for the store; HeldStarts: a slot
	// of the job whose claim waited so starts with it.
	Held, HeldStarts bool
}

// Decide returns what becomes of s, and with Skipped or Behind the reason to record.
func Decide(s Slot) (Action, string) {
	if s.Active+s.Starting == 0 || s.Policy == Allow {
		return Run, ""
	}
	switch s.Policy {
	case Queue:
		return Queued, ""
	case Replace:
		return Replacing, ""
	}
	reason := ReasonRunning
	switch {
	case s.HeldStarts:
		reason = ReasonBacklog
	case s.Held:
		// It found no run in progress when it fired (else it was skipped then): the run in its
		// way started since.
		reason = ReasonHeld
	case s.Active == 0:
		reason = ReasonSameTime
	}
	if s.Active == 0 && !s.HasRun {
		return Behind, reason
	}
	return Skipped, reason
}
