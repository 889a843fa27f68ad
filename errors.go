package scheduler

import (
	"errors"
	"fmt"
)

// ErrFenced means the scheduler's own store refused a write's token for its job: the job's fence
// is above it. Nothing the write made commits, and it must not be retried; the runner steps down,
// or blocks only that job when etcd confirms the term.
var ErrFenced = errors.New("scheduler: fenced out: the store refused the token")

// ErrFenceHeld means a raise of a job's fence gave up waiting for a transaction that entered
// the fence with an older token and is still open: a frozen old leader's write, or a job's
// database role inside fence_verify (or holding the fence's advisory lock). It says nothing
// about the other jobs: the leader holds back that job alone and raises its fence again later.
var ErrFenceHeld = errors.New("scheduler: a transaction with an older token holds the job's fence")

// ErrRefused means a job's receiver (an http job's service answering 409 Conflict) refused the
// run's token. Only the scheduler's own store may end a term: the run ends recorded fenced, is not
// retried, and the term and its other runs go on. A receiver is another party; what it says about
// tokens is its view, not the store's.
var ErrRefused = errors.New("scheduler: the receiver refused the token")

// ErrNotRunning reports the completion of a run that the ledger no longer holds as running: it
// was finished already, or does not exist. Such a write is not retried.
var ErrNotRunning = errors.New("scheduler: the run is no longer running")

// FenceError is a write the store refused for one job: the job's fence is above the writer's
// token. errors.Is(err, ErrFenced) holds for it. The runner reads Job to hold back that job
// alone when etcd confirms its term.
type FenceError struct {
	Job   string // the job whose fence refused the write; empty when the store did not say
	Token int64  // the writer's token
	Fence int64  // the job's fence; 0 when the store did not say
	// Err is the store's account of the refusal: its message, and the store's own sentinels
	// for errors.Is. Nil for a refusal that has nothing to add to the fields.
	Err error
}

// Error implements error: Err's message when there is one.
func (e *FenceError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("job %q: token %d is older than the fence %d", e.Job, e.Token, e.Fence)
}

// Unwrap returns the store's account of the refusal.
func (e *FenceError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrFenced) true.
func (e *FenceError) Is(target error) bool { return target == ErrFenced }

// HeldError is a write that gave up waiting for a job's fence, held by another session (a
// job's role holding the fence's advisory lock, say). errors.Is(err, ErrFenceHeld) holds for
// it. The runner reads Job to hold back that job alone, as it does when a raise gives up.
type HeldError struct {
	Job string // the job whose fence another session holds
	// Err is the store's account: its message, and the store's own sentinels for errors.Is.
	Err error
}

// Error implements error.
func (e *HeldError) Error() string { return fmt.Sprintf("job %q: %v", e.Job, e.Err) }

// Unwrap returns the store's account.
func (e *HeldError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrFenceHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrFenceHeld }

// permanentError marks an error that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks an error that retrying cannot fix (a 4xx answer, a bad command path).
// errors.Is(Permanent(e), e) stays true and the message is e's. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or an error it wraps, was marked by Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
