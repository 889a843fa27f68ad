// Package refusal reads the store's refusals of a leader's writes for the runner: which job a
// refusal names, and what an operator is told about a job blocked by one.
package refusal

import (
	"errors"
	"fmt"

	"scheduler"
)

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

// Job returns the job a refusal names, else fallback, and the fence it reports.
func Job(err error, fallback string) (string, int64) {
	var fe *scheduler.FenceError
	if errors.As(err, &fe) && fe.Job != "" {
		return fe.Job, fe.Fence
	}
	return fallback, 0
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
