package outbox

import (
	"context"
	"testing"

	"go.uber.org/zap"

	"scheduler/internal/fence"
	"scheduler/internal/testenv"
)

// openStore opens a migrated store on a fresh database of the Postgres test cluster, with job's
// fence raised to token; the caller closes it. The store logs nothing, so that its logging is
// not part of what a case measures.
func openStore(ctx context.Context, b *testing.B, job string, token int64) *fence.Store {
	b.Helper()
	store, err := fence.Open(ctx, fence.Config{DSN: testenv.MustDatabase(b)}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		store.Close()
		b.Fatal(err)
	}
	if err := store.RaiseAll(ctx, []string{job}, token); err != nil {
		store.Close()
		b.Fatal(err)
	}
	return store
}
