package jobs

import (
	"context"
	"errors"
	"time"
)

// Run is one attempt of a job at a slot, as every job receives it.
type Run struct {
	Job     string    // job name
	Slot    time.Time // the scheduled slot (for a manual trigger: the trigger time)
	Token   int64     // fencing token of the leadership term that runs it
	Attempt int       // 1 for the first attempt, 2 for the first retry...
	RunID   string    // stable across the retries of one slot: use it as an idempotency key
	Manual  bool      // started by `scheduler trigger`, not by the schedule
}

// Executor runs one attempt. output is a bounded excerpt of what the job printed or returned,
// stored in the run ledger. A nil error means success.
//
// Execute returns once everything the attempt started has ended. When ctx is done it stops the
// attempt and returns an error wrapping ctx.Err(). An error wrapping ErrFenced or ErrRefused
// must not be retried; an error marked Permanent need not be.
type Executor interface {
	Execute(ctx context.Context, run Run) (output string, err error)
}

// ErrFenced means the scheduler's own store rejected the run's token for its job. The run must
// not be retried; the runner steps down, or blocks only that job when etcd confirms the term.
var ErrFenced = errors.New("jobs: fenced out: the store refused the token")

// ErrFenceHeld means a raise of a job's fence gave up waiting for a transaction that entered
// the fence with an older token and is still open: a frozen old leader's write, or a job's
// database role inside fence_verify (or holding the fence's advisory lock). It says nothing
// about the other jobs: the leader holds back that job alone and raises its fence again later.
var ErrFenceHeld = errors.New("jobs: a transaction with an older token holds the job's fence")

// ErrRefused means a job's receiver (an http job's service answering 409 Conflict) refused the
// run's token. Only the scheduler's own store may end a term: the run ends recorded fenced, is not
// retried, and the term and its other runs go on. A receiver is another party; what it says about
// tokens is its view, not the store's.
var ErrRefused = errors.New("jobs: the receiver refused the token")

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

// Tx is the store transaction a fenced job writes through. Placeholders are $1, $2, ...
type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) (rowsAffected int64, err error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
}

// Row is one result row.
type Row interface{ Scan(dest ...any) error }

// Fencer runs fn in one transaction whose first statement is the fence check for (job, token);
// it returns an error wrapping ErrFenced when the token is stale. The store implements it.
//
// The fence check also raises a lower fence to token, so the first fenced write of a term shuts
// out every older term. fn's error rolls the transaction back and is returned (wrapped or not);
// a nil error commits. fn may be called again, in a new transaction, when the store retries a
// serialization failure, so it must set rather than accumulate what it reports, and must not keep
// tx.
type Fencer interface {
	Fenced(ctx context.Context, job string, token int64, fn func(ctx context.Context, tx Tx) error) error
}
