package runkey

import (
	"time"

	"scheduler"
)

// Claim is a slot's run as a claim answered it: the run's key but for the job and whether the
// slot is manual, which the slot holds.
type Claim struct {
	RunID   int64
	At      time.Time // the run's ScheduledAt as the ledger answered it
	Status  scheduler.Status
	Token   int64
	Attempt int
}

// ClaimOf is r's claim.
func ClaimOf(r scheduler.Run) Claim {
	return Claim{RunID: r.RunID, At: r.ScheduledAt, Status: r.Status, Token: r.Token, Attempt: r.Attempt}
}

// Run is the run of slot that c was answered for, as the ledger answered it.
func (c Claim) Run(slot scheduler.SlotKey) scheduler.Run {
	return scheduler.Run{RunID: c.RunID, Job: slot.Job, ScheduledAt: c.At, Manual: slot.Manual,
		Status: c.Status, Token: c.Token, Attempt: c.Attempt}
}

// Ref is Run, for a caller that passes the run on by pointer.
func (c Claim) Ref(slot scheduler.SlotKey) *scheduler.Run {
	r := c.Run(slot)
	return &r
}

// Started is a run just started: what its start line and the record of its start need.
type Started struct {
	RunID   int64
	Job     string
	Slot    time.Time
	Attempt int
}

// StartedOf is r's start.
func StartedOf(r scheduler.Run) Started {
	return Started{RunID: r.RunID, Job: r.Job, Slot: r.ScheduledAt, Attempt: r.Attempt}
}

// maxKept bounds the capacity Starts keeps between steps.
const maxKept = 4096

// Starts are the runs a step of the firing loop started, kept until the step ends and their
// start lines are written. Reset keeps the buffer for the next step unless a herd grew it: a
// herd's worth is not kept until the next herd.
type Starts struct{ runs []Started }

// Add adds r.
func (s *Starts) Add(r scheduler.Run) { s.runs = append(s.runs, StartedOf(r)) }

// Runs are the runs added since the last Reset, in order; valid until the next Add or Reset.
func (s *Starts) Runs() []Started { return s.runs }

// ClaimedAhead are the runs among started that were claimed ahead and not started before (attempt
// 0): those whose start is to be recorded.
func ClaimedAhead(started []Started) []scheduler.RunRef {
	var refs []scheduler.RunRef
	for _, r := range started {
		if r.Attempt == 0 {
			refs = append(refs, scheduler.RunRef{RunID: r.RunID, Job: r.Job})
		}
	}
	return refs
}

// Reset forgets the runs added.
func (s *Starts) Reset() {
	clear(s.runs)
	s.runs = s.runs[:0]
	if cap(s.runs) > maxKept {
		s.runs = nil
	}
}
