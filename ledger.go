package scheduler

import (
	"context"
	"time"
)

// Ledger is the run ledger as the runner uses it: the store's methods, with the fenced
// transactions of the job kinds. Every write carries the term's token and is fenced by the
// store: a write with a token older than the job's fence fails with an error wrapping ErrFenced
// (a *FenceError naming the job), and nothing it made commits.
type Ledger interface {
	Fencer

	// RaiseAll raises the fence of every job to token, waiting until no write with an older
	// token can still commit. A new leader calls it before anything else. A raise that gave up
	// waiting for an older writer fails with an error wrapping ErrFenceHeld.
	RaiseAll(ctx context.Context, jobs []string, token int64) error
	// ClaimMany creates running runs (attempt 1) for slots in one fenced round trip. A slot that
	// already has a run is reported with Written false.
	ClaimMany(ctx context.Context, token int64, node string, slots []SlotKey) ([]Result, error)
	// ClaimAheadMany claims slots like ClaimMany, ahead of their fire time, leaving their runs
	// not started: attempt 0, until StartMany. Taking over such a run makes it attempt 1, so a
	// slot claimed ahead by a leader that stopped before it fired is run by the next as attempt 1.
	ClaimAheadMany(ctx context.Context, token int64, node string, slots []SlotKey) ([]Result, error)
	// StartMany records that runs claimed ahead started (attempt 1); runs that started
	// already, or are finished, are left as they are. It returns how many it marked.
	StartMany(ctx context.Context, token int64, refs []RunRef) (int, error)
	// Reclaim takes over a run left running under an older token; its attempt rises by one.
	Reclaim(ctx context.Context, token int64, node string, slot SlotKey) (Run, error)
	// ReclaimMany takes over the runs of slots left running under older tokens, like Reclaim, in
	// fenced batches: Result i is slots[i]'s run as the call left it, Written if it took it over.
	ReclaimMany(ctx context.Context, token int64, node string, slots []SlotKey) ([]Result, error)
	// RecordMany stores slots that end without running.
	RecordMany(ctx context.Context, token int64, node string, outs []Outcome) ([]Result, error)
	// Complete finishes a running run (this term's, or an orphan of an older one). A run that is
	// no longer running fails with an error wrapping ErrNotRunning.
	Complete(ctx context.Context, token int64, c Completion) (Run, error)
	// CompleteMany finishes runs like Complete in one fenced round trip; Result i is Written when
	// cs[i] was finished (not: it was no longer running).
	CompleteMany(ctx context.Context, token int64, cs []Completion) ([]Result, error)
	// NextAttempt records a retry of a running run and returns its new attempt number.
	NextAttempt(ctx context.Context, token int64, job string, runID int64) (int, error)
	// Window returns the scheduled runs of jobs with slots in [from, to].
	Window(ctx context.Context, jobs []string, from, to time.Time) ([]Run, error)
	// LastScheduled returns the newest run of a scheduled slot (not a manual trigger's, whose
	// slot is its requester's clock) of each job that has one.
	LastScheduled(ctx context.Context, jobs ...string) (map[string]Run, error)
	// Orphans returns the runs of jobs left running under a token older than their fence.
	Orphans(ctx context.Context, jobs ...string) ([]Run, error)
}
