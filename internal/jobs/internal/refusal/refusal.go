// Package refusal reads the store's refusals of a leader's writes for the runner: which job a
// refusal names, what an operator is told about a job blocked by one (Block), and how a batch
// write goes on without the jobs blocked (Without).
package refusal

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"scheduler"
)

// Block is a job the leader does not run because the store refuses its token for that job while
// etcd confirms the term.
type Block struct {
	Job    string
	Token  int64     // the term's token
	Fence  int64     // the job's fence, above Token (0: the store did not say)
	Since  time.Time // when the job was blocked, on the runner's clock
	Reason string    // both possible causes and the remedy of each, for an operator
	// Held: the job's fence is not above Token, but its raise to Token gave up waiting for a
	// transaction that entered the fence with an older token and is still open.
	Held bool
}

// AddedReason says why a job a reload added does not run yet, to whoever asks for a run of it.
const AddedReason = "added by a reload: its fence is being raised to the term's token; try again in a moment"

// BlockReason says why job is blocked and what to do, for logs, status pages and /readyz.
func BlockReason(job string, token, fence int64) string {
	above := "above"
	if fence > 0 {
		above = fmt.Sprintf("at %d, above", fence)
	}
	return fmt.Sprintf("job %q is blocked: its fence is %s the leader's token %d, and etcd confirms that term, "+
		"so no newer leader of this election raised it. Either another deployment with an election of its own shares "+
		"this store and schema (each replica with its own embedded etcd, another election.prefix, backend or etcd "+
		"cluster): give every replica of the store the same election, then stop the other; or etcd's revisions went backwards (etcd restored from a snapshot "+
		"without --bump-revision): restore it again with --bump-revision past the highest fence "+
		"(SELECT max(token) FROM job_fence), or reset the fence; or something outside the scheduler raised it "+
		"(a job's database role allowed to call a raising fence function): revoke the raising functions from "+
		"that role, then reset the fence as the table owner (SELECT fence_admin_reset('%s') in the scheduler's "+
		"schema on Postgres; DELETE FROM job_fence WHERE job = '%s' on SQLite). The other jobs keep running; "+
		"this one runs again by itself once its fence is reset", job, above, token, job, job)
}

// HeldReason says why job is held back and what to do, for logs, status pages and /readyz.
func HeldReason(job string, token int64) string {
	return fmt.Sprintf("job %q is blocked: its fence cannot be raised to the leader's token %d, because a "+
		"transaction that entered it with an older token is still open: a frozen earlier leader's write, "+
		"or a job's database role inside fence_verify('%s', ...) or holding the fence's advisory lock. "+
		"Find it in pg_stat_activity and pg_locks (locktype advisory) and end it (pg_terminate_backend; "+
		"a prepared transaction, listed in pg_prepared_xacts, with ROLLBACK PREPARED), "+
		"or let idle_in_transaction_session_timeout end it. The other jobs keep running; this one runs "+
		"again by itself once that transaction ends", job, token, job)
}

// Job returns the job a refusal names, else fallback, and the fence it reports: a write refused
// by the fence (scheduler.FenceError) or one that gave up waiting for a fence another session
// holds (scheduler.HeldError).
func Job(err error, fallback string) (string, int64) {
	var fe *scheduler.FenceError
	if errors.As(err, &fe) && fe.Job != "" {
		return fe.Job, fe.Fence
	}
	var he *scheduler.HeldError
	if errors.As(err, &he) && he.Job != "" {
		return he.Job, 0
	}
	return fallback, 0
}

// RefusedOrHeld reports a refusal by the fence, or a write that gave up waiting for a job's fence
// that another session holds, naming the job: either holds back one job, not the term.
func RefusedOrHeld(err error) bool {
	var he *scheduler.HeldError
	return errors.Is(err, scheduler.ErrFenced) || errors.As(err, &he) && he.Job != ""
}

// BatchJob names the job of a batch whose items all belong to one; else "".
func BatchJob[T any](items []T, jobOf func(T) string) string {
	if len(items) == 0 {
		return ""
	}
	for _, x := range items[1:] {
		if jobOf(x) != jobOf(items[0]) {
			return ""
		}
	}
	return jobOf(items[0])
}

// Ops are what Without asks of the runner.
type Ops struct {
	// Refused settles a refusal of a write for job: nil when the job is now blocked and the
	// term goes on, else the error that ends the term.
	Refused func(job string, err error) error
	Blocked func(job string) bool             // whether job is blocked
	Fenced  func(job string, err error) error // the error that ends the term for a refusal
}

// Without settles a write of a batch that the store refused (err) for one of its jobs, or that
// gave up waiting for one's fence held by another session. When the refusal blocks that job and
// the term goes on, write is called again with the items of the jobs
// not blocked, until it is not refused. It returns the items last written and that write's error
// (nil, or a failure other than the fence), or end, the error that ends the term. An err that is
// not a refusal is returned with items as they are.
func Without[T any](ops Ops, items []T, jobOf func(T) string, err error, write func([]T) error) (rest []T, werr, end error) {
	for RefusedOrHeld(err) {
		if end := ops.Refused(BatchJob(items, jobOf), err); end != nil {
			return items, err, end
		}
		rest := slices.DeleteFunc(slices.Clone(items), func(x T) bool { return ops.Blocked(jobOf(x)) })
		if len(rest) == len(items) {
			return items, err, ops.Fenced(jobOf(items[0]), err)
		}
		if items = rest; len(items) == 0 {
			return nil, nil, nil
		}
		err = write(items)
	}
	return items, err, nil
}
