package fence

import (
	"context"
	"fmt"
	"strconv"
)

// RunSecret returns the secret of the run runID, with which a job's own
// transaction proves to Postgres's outbox_enqueue that the message it
// queues is of that run's slot (the setting scheduler.run_secret): every
// fence of a term holds the same token, so the token alone would let one
// job's role queue another job's messages. The secret is stable across the
// run's attempts and takeovers; a stale attempt holding it is still refused
// by its token. SQLite has no roles and no function to call: its secret is
// empty.
func (s *Store) RunSecret(ctx context.Context, runID string) (string, error) {
	// outbox_enqueue reads run ids of up to 18 digits from a secret, short of bigint's bound.
	if id, err := strconv.ParseInt(runID, 10, 64); err != nil || id <= 0 || id >= 1e18 || strconv.FormatInt(id, 10) != runID {
		return "", fmt.Errorf("secret of run %q: want a run id, a positive decimal of up to 18 digits", runID)
	}
	secret, err := s.b.RunSecret(ctx, runID)
	if err != nil {
		return "", fmt.Errorf("secret of run %s: %w", runID, err)
	}
	return secret, nil
}
