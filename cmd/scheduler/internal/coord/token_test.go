package coord

import (
	"context"
	"strings"
	"testing"
	"time"

	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
)

// TestTokenTaken: a new term whose token a job's fence, or the outbox's, already holds was handed
// that token by another election sharing the store, and is refused, naming the fence and the
// accident; a fence below or above the token is not this check's business, and a store that
// does not answer leaves the term to the runner.
func TestTokenTaken(t *testing.T) {
	fencetest.Each(t, 30*time.Second, func(ctx context.Context, t *testing.T, store *fence.Store) {
		if err := store.RaiseAll(ctx, []string{"x", "y"}, 7); err != nil {
			t.Fatal(err)
		}
		if err := TokenTaken(ctx, store, 8, jobs("x", "y")); err != nil {
			t.Fatalf("TokenTaken(8) = %v, want nil: the fences are below the token", err)
		}
		if err := TokenTaken(ctx, store, 6, jobs("x")); err != nil {
			t.Fatalf("TokenTaken(6) = %v, want nil: a fence above the token blocks the job, it does not refuse the term", err)
		}
		err := TokenTaken(ctx, store, 7, jobs("z", "y"))
		if err == nil || !strings.Contains(err.Error(), `"y"`) || !strings.Contains(err.Error(), "election of its own") ||
			!strings.Contains(err.Error(), "Redis lost its token counter") {
			t.Fatalf("TokenTaken(7) = %v, want the fence of y and the accident named", err)
		}
		if _, err := store.ClaimOutbox(ctx, 9, 1, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := TokenTaken(ctx, store, 9, nil); err == nil || !strings.Contains(err.Error(), fence.OutboxFence) {
			t.Fatalf("TokenTaken(9) = %v, want the outbox's fence named", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := TokenTaken(cctx, store, 7, jobs("x")); err != nil {
			t.Fatalf("TokenTaken with the store unanswered = %v, want nil", err)
		}
	})
}

// jobs is a table's names, as the daemon keeps them.
func jobs(names ...string) *map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return &m
}
