package fence

import (
	"context"
	"fmt"
	"slices"
)

// HeldFences returns, sorted, the jobs of jobs whose raise to token would wait for a transaction
// of another session that holds the job's fence: on Postgres, a session granted the fence's
// advisory lock (a writer that entered it with an older token, a job role after fence_verify, a
// frozen leader's raise) while the fence is below token. SQLite returns none: its raises wait
// for the file's write lock, not for one job's.
//
// It is a snapshot of the server's lock table, not a promise: a lock may be released or taken
// right after it is read, so a caller still raises every job it does not hold back, and treats
// a job reported here as held only as long as a raise of it would wait. A transaction holding a
// row lock on job_fence without the advisory lock (an operator's SELECT ... FOR UPDATE) is not
// reported: the lock table lists row locks only while a session waits for one.
func (s *Store) HeldFences(ctx context.Context, jobs []string, token int64) ([]string, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	for _, j := range jobs {
		if err := checkJobToken(j, token); err != nil {
			return nil, fmt.Errorf("read held fences: %w", err)
		}
	}
	held, err := s.b.Held(ctx, jobs, token)
	if err != nil {
		return nil, fmt.Errorf("read held fences of %d jobs below token %d: %w", len(jobs), token, err)
	}
	slices.Sort(held)
	return held, nil
}
