package fence

import (
	"errors"
	"fmt"
)

// Sentinel errors; test for them with errors.Is.
var (
	// ErrStale reports a write with a token older than the job's fence: a
	// newer leader owns the job. The result must be discarded and the
	// process must stop acting as leader. The error is a *StaleError.
	ErrStale = errors.New("fence: stale token")

	// ErrTokenRegressed reports a leader whose token is lower than a fence
	// already stored: etcd's revisions went backwards. The error is a
	// *RegressionError whose message says what to do.
	ErrTokenRegressed = errors.New("fence: token regressed")

	// ErrRaiseTimeout reports a raise that waited longer than its
	// lock_timeout for an older writer to finish (SQLSTATE 55P03). Retry with
	// backoff; a writer stuck that long is usually a frozen old leader, which
	// idle_in_transaction_session_timeout ends.
	ErrRaiseTimeout = errors.New("fence: raise timed out waiting for older writers")

	// ErrSlotTaken reports a claim or record of a slot that already has a
	// run. The error is a *SlotTakenError carrying that run.
	ErrSlotTaken = errors.New("fence: slot already has a run")

	// ErrNotRunning reports a completion of a run that is not running (it
	// was completed already) or does not exist.
	ErrNotRunning = errors.New("fence: run is not running")

	// ErrNotOrphaned reports a reclaim of a slot whose run is not an orphan:
	// it is not running, or it is running under the caller's own token.
	ErrNotOrphaned = errors.New("fence: run is not orphaned")

	// ErrSchemaBehind reports a store whose schema lacks migrations this
	// binary needs; the message says to run `scheduler migrate`.
	ErrSchemaBehind = errors.New("fence: store schema is behind")
)

// StaleErrorCode is the SQLSTATE that fence_check raises for a stale token.
// SQL clients (scripts run by exec jobs) test for it; Go callers use
// errors.Is(err, ErrStale).
const StaleErrorCode = "JF001"

// StaleError is a write refused by the fence.
type StaleError struct {
	Job   string // the job whose fence refused the write
	Token int64  // the writer's token
	Fence int64  // the job's fence when the write was refused
}

// Error implements error.
func (e *StaleError) Error() string {
	return fmt.Sprintf("fence: job %q: token %d is older than the fence %d: a newer leader owns the job, or the fence was raised from outside the scheduler", e.Job, e.Token, e.Fence)
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// RegressionError is a raise refused because a stored fence is above the
// leader's token.
type RegressionError struct {
	Token int64  // the leader's token
	Job   string // the job with the highest stored fence
	Fence int64  // that fence
	Reset string // how to remove the stored fences on this store
}

// Error implements error. The message is meant for an operator: it says why
// jobs will not run and how to repair etcd.
func (e *RegressionError) Error() string {
	// New revisions after a restore start above the snapshot's revision plus
	// the bump, so a bump of Fence lifts every new token above every stored
	// fence whatever revision the snapshot has.
	return fmt.Sprintf("fence: token regressed: leader token %d is lower than the stored fence %d of job %q: "+
		"etcd's revisions went backwards (etcd was restored from an old snapshot without --bump-revision, "+
		"or replaced by a new cluster); refusing to run jobs. "+
		"To repair: take a snapshot of the current etcd (etcdctl snapshot save SNAPSHOT), stop every replica and etcd member, "+
		"restore every member with `etcdutl snapshot restore SNAPSHOT --bump-revision %d --mark-compacted`, "+
		"then start etcd and the replicas. "+
		"If etcd cannot be restored that way, remove the stored fences while no replica runs (%s)",
		e.Token, e.Fence, e.Job, e.Fence, e.Reset)
}

// Is makes errors.Is(err, ErrTokenRegressed) true.
func (e *RegressionError) Is(target error) bool { return target == ErrTokenRegressed }

// SlotTakenError is a claim of a slot that already has a run.
type SlotTakenError struct {
	Run Run // the slot's existing run
}

// Error implements error.
func (e *SlotTakenError) Error() string {
	return fmt.Sprintf("fence: slot %s of job %q already has run %d (%s, token %d, attempt %d)",
		e.Run.ScheduledAt.Format(timeLayout), e.Run.Job, e.Run.RunID, e.Run.Status, e.Run.Token, e.Run.Attempt)
}

// Is makes errors.Is(err, ErrSlotTaken) true.
func (e *SlotTakenError) Is(target error) bool { return target == ErrSlotTaken }
