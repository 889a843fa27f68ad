// Package verdict holds the errors with which the store's backends refuse
// a write: a token older than the job's fence, a raise that waited too long,
// a run that is not running, statements that ended their own transaction.
// The store re-exports them (fence.ErrStale and the others) and documents
// them there; they live here so that both backends return the very same
// values without importing the store.
//
// Each refusal of the fence also matches the scheduler's word for it
// (scheduler.ErrFenced, scheduler.ErrFenceHeld, scheduler.ErrNotRunning),
// so that the runner needs nothing of the store to tell them.
package verdict

import (
	"errors"
	"fmt"

	"scheduler"
)

// The refusals; fence documents each under the same name.
var (
	// ErrStale reports a write with a token older than the job's fence.
	ErrStale error = &sentinel{"fence: stale token", scheduler.ErrFenced}
	// ErrTokenRegressed reports a leader whose token is lower than a stored
	// fence.
	ErrTokenRegressed error = &sentinel{"fence: token regressed", scheduler.ErrFenced}
	// ErrRaiseTimeout reports a raise that waited longer than its
	// lock_timeout for an older writer (SQLSTATE 55P03).
	ErrRaiseTimeout error = &sentinel{"fence: raise timed out waiting for older writers", scheduler.ErrFenceHeld}
	// ErrNotRunning reports a write to a run that is not running or does
	// not exist.
	ErrNotRunning error = &sentinel{"fence: run is not running", scheduler.ErrNotRunning}
	// ErrTxEnded reports a sql job's statements that ended the fenced
	// transaction themselves.
	ErrTxEnded = errors.New("the statements ended the fenced transaction themselves (COMMIT, ROLLBACK, END or PREPARE TRANSACTION in the text, AND CHAIN or not); what ran before a COMMIT is committed, what ran after it in a transaction the text began is rolled back, and what ran after it outside one was committed unfenced")
)

// StaleErrorCode is the SQLSTATE that the fence's SQL functions raise for a
// stale token.
const StaleErrorCode = "JF001"

// sentinel is an error of the store that also matches the scheduler's word for it.
type sentinel struct {
	msg  string
	also error
}

func (e *sentinel) Error() string { return e.msg }

// Is makes errors.Is(err, e.also) true.
func (e *sentinel) Is(target error) bool { return target == e.also }

// Held is a write of a batch that gave up waiting for job's fence, which another session holds
// (err, the lock timeout's error). errors.Is(err, ErrRaiseTimeout) and
// errors.Is(err, scheduler.ErrFenceHeld).
func Held(job string, err error) *scheduler.HeldError {
	return &scheduler.HeldError{Job: job, Err: fmt.Errorf("%w: %w", ErrRaiseTimeout, err)}
}

// Stale is a write refused by the fence: token is older than the job's
// fence. errors.Is(err, ErrStale) and errors.Is(err, scheduler.ErrFenced).
func Stale(job string, token, fence int64) *scheduler.FenceError {
	return &scheduler.FenceError{Job: job, Token: token, Fence: fence, Err: stale{job: job, token: token, fence: fence}}
}

// stale is the store's account of a stale write.
type stale struct {
	job          string
	token, fence int64
}

func (e stale) Error() string {
	return fmt.Sprintf("fence: job %q: token %d is older than the fence %d: a newer leader owns the job, or the fence was raised from outside the scheduler", e.job, e.token, e.fence)
}

func (stale) Unwrap() error { return ErrStale }

// InDoubtError is a commit whose reply never came: the connection broke after COMMIT was sent,
// so the transaction may have committed or not. Xid is the transaction's id on the server, for
// asking the server which (pg_xact_status); Rows is what the statements wrote if it committed.
type InDoubtError struct {
	Xid  string
	Rows int64
	Err  error
}

func (e *InDoubtError) Error() string {
	return fmt.Sprintf("commit of transaction %s: no reply from the server, so it may have committed: %v", e.Xid, e.Err)
}

func (e *InDoubtError) Unwrap() error { return e.Err }
