package coord

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"scheduler/internal/fence"
)

// TokenTaken returns an error when one of the fences of jobs (the names of the table), or the outbox's, already holds the
// new term's token before the term raised any. Under one election a token belongs to one term,
// so another election shares the store: a replica on an embedded etcd of its own, or on another
// election.prefix, backend or etcd cluster, was handed the same token, and the fence cannot tell
// the two terms apart; or the backend's tokens went back (etcd restored without --bump-revision,
// Redis without its counter). The caller refuses the term: the next one has a newer token, which fences
// the other out (and the other, its election confirming its term, blocks its jobs and says why).
// A store that does not answer returns nil: the runner's takeover waits for it.
func TokenTaken(ctx context.Context, store *fence.Store, token int64, jobs *map[string]bool) error {
	names := []string{fence.OutboxFence}
	if jobs != nil {
		names = slices.AppendSeq(names, maps.Keys(*jobs))
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fences, err := store.Fences(cctx, names...)
	if err != nil {
		return nil
	}
	for _, n := range names {
		if fences[n] == token {
			return fmt.Errorf("the fence of %q already holds this term's token %d, which no other term of this election "+
				"can hold: another deployment with an election of its own shares this store and schema (each replica "+
				"with its own embedded etcd, another election.prefix, backend or etcd cluster); give every replica of "+
				"the store the same election, then stop the other; or etcd's revisions went backwards (restored from a snapshot without "+
				"--bump-revision), and a later term's token passes the fences; or, with election.backend redis, Redis lost its "+
				"token counter (a restart without persistence, a failover, FLUSHALL) before the other term raised a fence", n, token)
		}
	}
	return nil
}
