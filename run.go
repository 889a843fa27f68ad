package scheduler

import "time"

// Status is the state of a run in the ledger.
type Status string

// The statuses of a run. Only running is not terminal.
const (
	StatusRunning   Status = "running"   // claimed; the job is running or its leader died (an orphan)
	StatusSucceeded Status = "succeeded" // the job finished without error
	StatusFailed    Status = "failed"    // the job finished with an error, after its retries
	StatusSkipped   Status = "skipped"   // not run on purpose (overlap: skip, paused, misfire: skip)
	StatusMissed    Status = "missed"    // not run because no leader was there in time
	StatusFenced    Status = "fenced"    // cut off by a leadership change; its late writes were refused
)

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool {
	switch s {
	case StatusRunning, StatusSucceeded, StatusFailed, StatusSkipped, StatusMissed, StatusFenced:
		return true
	}
	return false
}

// Terminal reports whether s ends a run.
func (s Status) Terminal() bool { return s.Valid() && s != StatusRunning }

// SlotKey identifies a run: a job's scheduled slot, or for a manual run its trigger time with
// Manual set. The ledger stores At in UTC with microsecond precision.
type SlotKey struct {
	Job    string
	At     time.Time
	Manual bool
	// Backfill, when set on a scheduled slot, makes its claim the backfill request's with this
	// id, and Rerun lets it take over a run that succeeded (see BackfillSlot). They are how the
	// slot is claimed, not part of its identity: Run.Key leaves them out.
	Backfill int64
	Rerun    bool
}

// Run is one row of the ledger. Its JSON is the run object of `scheduler history --json` and
// `status --json`.
type Run struct {
	RunID       int64      `json:"run_id"` // stable for the slot across attempts
	Job         string     `json:"job"`
	ScheduledAt time.Time  `json:"scheduled_at"` // the slot, UTC
	Manual      bool       `json:"manual"`       // a manual trigger, keyed by its trigger time
	Status      Status     `json:"status"`
	Token       int64      `json:"token"`       // of the term that claimed (or took over) the run
	Node        string     `json:"node"`        // the replica that ran it
	Attempt     int        `json:"attempt"`     // 1 for the first run, +1 per retry or takeover; 0 if it never ran
	StartedAt   *time.Time `json:"started_at"`  // nil if it never ran
	FinishedAt  *time.Time `json:"finished_at"` // nil while running
	Error       string     `json:"error"`       // an excerpt: the ledger keeps its start
	Output      string     `json:"output"`      // an excerpt: the ledger keeps its start and end
	Reason      string     `json:"reason"`      // why it was skipped, missed or fenced
	// Backfill is set when a backfill request ran the slot (BackfillID names the request): the
	// run is still the slot's only run, and an earlier outcome of the slot was replaced by it.
	Backfill   bool  `json:"backfill"`
	BackfillID int64 `json:"backfill_id,omitempty"`
}

// Key returns the run's slot.
func (r Run) Key() SlotKey { return SlotKey{Job: r.Job, At: r.ScheduledAt, Manual: r.Manual} }

// Result is the outcome for one slot or run of a batch write of the ledger: a claim, a record,
// a takeover or a completion.
//
// The run of a claim, record or takeover is the run's key: RunID, the slot (Job, ScheduledAt,
// Manual), Status, Token and Attempt; the other fields stay empty. A batch reads back only what
// its caller acts on: a takeover claims, records and takes over thousands of slots, and finished
// runs in the way may hold long excerpts.
type Result struct {
	Run     Run  // the run as this call left it: written by it, or as found
	Written bool // this call created (claim, record), took over (reclaim) or completed the run
}

// Completion finishes a running run.
type Completion struct {
	RunID  int64
	Job    string // the run's job; its fence guards the write
	Status Status // a terminal status
	Error  string
	Output string
	Reason string
	// Attempt is how many attempts the run made; the ledger keeps the larger of it and its own
	// count, which misses retries made while the store was unreachable. 0 keeps the ledger's.
	Attempt int
	// Notice, when set, is queued in the outbox by the write that finishes the run.
	Notice *Notice
}

// Outcome records a slot that ends without running.
type Outcome struct {
	Slot   SlotKey
	Status Status // StatusSkipped or StatusMissed (or StatusFenced, StatusFailed)
	Reason string
	// Notice, when set, is queued in the outbox by the write that records the slot.
	Notice *Notice
}

// RunRef names a run for a batch write that marks runs: its id and its job, whose fence guards
// the write.
type RunRef struct {
	RunID int64
	Job   string
}
