package fence

import (
	"context"
	"fmt"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// Prune deletes at most r.Limit finished runs of r.Job that r lets go,
// oldest first, in one transaction fenced with token on the job, and
// returns how many it deleted. Running runs are never deleted. The same
// transaction deletes up to r.Limit delivered outbox messages of the job
// whose runs are gone, so that the messages of a slot go with its run. A caller
// prunes a job by calling Prune until it returns fewer than r.Limit.
func (s *Store) Prune(ctx context.Context, token int64, r scheduler.Retention) (int, error) {
	if err := checkJobToken(r.Job, token); err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	if r.Limit <= 0 {
		return 0, fmt.Errorf("prune runs of job %q: limit %d: want > 0", r.Job, r.Limit)
	}
	if r.Keep < 0 {
		return 0, fmt.Errorf("prune runs of job %q: keep %d: want >= 0", r.Job, r.Keep)
	}
	if r.Protect.IsZero() {
		return 0, fmt.Errorf("prune runs of job %q: no protected window", r.Job)
	}
	r.Before, r.Protect = tables.NormTime(r.Before), tables.NormTime(r.Protect)
	n, err := retried(ctx, s, r.Job, token, func() (int, error) { return s.b.Prune(ctx, token, r) })
	if err != nil {
		return 0, fmt.Errorf("prune runs of job %q with token %d: %w", r.Job, token, err)
	}
	return n, nil
}
