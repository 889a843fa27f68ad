package jobs

import (
	"context"
	"time"
)

// Status is the state of a run in the ledger.
type Status string

// The statuses a run can have; only StatusRunning is not final.
const (
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusSkipped   Status = "skipped"
	StatusMissed    Status = "missed"
	StatusFenced    Status = "fenced"
)

// SlotKey identifies a run: a job's scheduled slot, or for a manual run its trigger time.
type SlotKey struct {
	Job    string
	At     time.Time
	Manual bool
}

// LedgerRun is a run as the ledger holds it.
type LedgerRun struct {
	RunID   int64
	Slot    SlotKey
	Status  Status
	Token   int64
	Attempt int
}

// Claimed is the result of claiming one slot: the run as the ledger left it, and whether this
// claim created it (false: the slot already had a run, which Run describes).
type Claimed struct {
	Run     LedgerRun
	Written bool
}

// Outcome records a slot that ends without running.
type Outcome struct {
	Slot   SlotKey
	Status Status // StatusSkipped or StatusMissed
	Reason string
}

// Completion finishes a running run.
type Completion struct {
	Attempt int // attempts made; the ledger keeps the larger of this and its own count
	RunID   int64
	Job     string
	Status  Status
	Error   string
	Output  string
	Reason  string
}

// Ledger is the run ledger as the runner uses it. Every write carries the term's token and is
// fenced by the store: a write with a token older than the job's fence fails with an error
// wrapping ErrFenced.
type Ledger interface {
	// RaiseAll raises the fence of every job to token, waiting until no write with an older
	// token can still commit. A new leader calls it before anything else.
	RaiseAll(ctx context.Context, jobs []string, token int64) error
	// ClaimMany creates running runs (attempt 1) for slots in one fenced round trip. A slot that
	// already has a run is reported with Written false.
	ClaimMany(ctx context.Context, token int64, node string, slots []SlotKey) ([]Claimed, error)
	// Reclaim takes over a run left running under an older token; its attempt rises by one.
	Reclaim(ctx context.Context, token int64, node string, slot SlotKey) (LedgerRun, error)
	// RecordMany stores slots that end without running.
	RecordMany(ctx context.Context, token int64, node string, outs []Outcome) error
	// Complete finishes a running run (this term's, or an orphan of an older one).
	Complete(ctx context.Context, token int64, c Completion) error
	// NextAttempt records a retry of a running run and returns its new attempt number.
	NextAttempt(ctx context.Context, token int64, job string, runID int64) (int, error)
	// Window returns the scheduled runs of jobs with slots in [from, to].
	Window(ctx context.Context, jobs []string, from, to time.Time) ([]LedgerRun, error)
	// Last returns the newest run of each job that has one.
	Last(ctx context.Context, jobs []string) (map[string]LedgerRun, error)
	// Orphans returns the runs of jobs left running under a token older than their fence.
	Orphans(ctx context.Context, jobs []string) ([]LedgerRun, error)
}

// BatchCompleter is an optional extension of a Ledger: one fenced round trip finishes many
// runs. A runner whose Ledger has it writes the outcomes of runs that end together in batches
// (a herd of short jobs), instead of one Complete per run.
type BatchCompleter interface {
	// CompleteMany finishes runs like Complete; done[i] reports whether cs[i] was finished
	// (false: it was no longer running). A write refused by the fence fails the whole batch
	// with an error wrapping ErrFenced.
	CompleteMany(ctx context.Context, token int64, cs []Completion) (done []bool, err error)
}

// BatchReclaimer is an optional extension of a Ledger: one fenced round trip takes over many
// orphans. A runner whose Ledger has it takes over the orphans of a takeover in batches instead
// of one Reclaim each.
type BatchReclaimer interface {
	// ReclaimMany takes over the runs of slots left running under older tokens, like Reclaim:
	// runs[i] is slots[i]'s run as this call left it and taken[i] whether this call took it
	// over. A write refused by the fence fails the whole batch with an error wrapping ErrFenced.
	ReclaimMany(ctx context.Context, token int64, node string, slots []SlotKey) (runs []LedgerRun, taken []bool, err error)
}
