package fence

import (
	"errors"
	"fmt"

	"scheduler"
	"scheduler/internal/fence/internal/verdict"
)

// Sentinel errors; test for them with errors.Is. The refusals of the fence also match the
// scheduler's own words for them: ErrStale and ErrTokenRegressed are errors.Is
// scheduler.ErrFenced, ErrRaiseTimeout is scheduler.ErrFenceHeld and ErrNotRunning is
// scheduler.ErrNotRunning, so that the runner needs nothing of this package to tell them.
var (
	// ErrStale reports a write with a token older than the job's fence: a
	// newer leader owns the job. The result must be discarded and the
	// process must stop acting as leader. The error is a
	// *scheduler.FenceError naming the job, the token and the fence.
	ErrStale = verdict.ErrStale

	// ErrTokenRegressed reports a leader whose token is lower than a fence
	// already stored: etcd's revisions went backwards. The error is a
	// *scheduler.FenceError naming the job with the highest stored fence,
	// whose message says what to do.
	ErrTokenRegressed = verdict.ErrTokenRegressed

	// ErrRaiseTimeout reports a raise that waited longer than its
	// lock_timeout for an older writer to finish (SQLSTATE 55P03). Retry with
	// backoff; a writer stuck that long is usually a frozen old leader, which
	// idle_in_transaction_session_timeout ends.
	ErrRaiseTimeout = verdict.ErrRaiseTimeout

	// ErrSlotTaken reports a claim or record of a slot that already has a
	// run. The error is a *SlotTakenError carrying that run.
	ErrSlotTaken = errors.New("fence: slot already has a run")

	// ErrNotRunning reports a completion of a run that is not running (it
	// was completed already) or does not exist.
	ErrNotRunning = verdict.ErrNotRunning

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
const StaleErrorCode = verdict.StaleErrorCode

// regressionError is a raise refused because a stored fence is above the
// leader's token. errors.Is(err, ErrTokenRegressed) and
// errors.Is(err, scheduler.ErrFenced).
func regressionError(job string, token, fence int64, reset string) *scheduler.FenceError {
	return &scheduler.FenceError{Job: job, Token: token, Fence: fence,
		Err: regression{job: job, token: token, fence: fence, reset: reset}}
}

// regression is the store's account of a token below a stored fence; reset
// says how to remove the stored fences on this store.
type regression struct {
	job          string
	token, fence int64
	reset        string
}

// Error is meant for an operator: it says why jobs will not run and how to
// repair etcd.
func (e regression) Error() string {
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
		e.token, e.fence, e.job, e.fence, e.reset)
}

func (regression) Unwrap() error { return ErrTokenRegressed }

// SlotTakenError is a claim of a slot that already has a run.
type SlotTakenError struct {
	Run scheduler.Run // the slot's existing run
}

// Error implements error.
func (e *SlotTakenError) Error() string {
	return fmt.Sprintf("fence: slot %s of job %q already has run %d (%s, token %d, attempt %d)",
		e.Run.ScheduledAt.Format(timeLayout), e.Run.Job, e.Run.RunID, e.Run.Status, e.Run.Token, e.Run.Attempt)
}

// Is makes errors.Is(err, ErrSlotTaken) true.
func (e *SlotTakenError) Is(target error) bool { return target == ErrSlotTaken }
