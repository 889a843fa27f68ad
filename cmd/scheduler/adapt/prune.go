package adapt

import (
	"context"
	"errors"
	"fmt"

	"scheduler/internal/fence"
	"scheduler/internal/retention"
)

var _ retention.Ledger = Pruner{}

// Pruner deletes runs of the store's ledger for the retention pruner.
type Pruner struct{ Store *fence.Store }

// Prune deletes one batch of b.Job's runs, fenced with token; a stale token is
// retention.ErrFenced.
func (p Pruner) Prune(ctx context.Context, token int64, b retention.Batch) (int, error) {
	n, err := p.Store.Prune(ctx, token, fence.Retention{
		Job: b.Job, Before: b.Before, Keep: b.Keep, Protect: b.Protect, Limit: b.Limit,
	})
	if errors.Is(err, fence.ErrStale) || errors.Is(err, fence.ErrTokenRegressed) {
		return n, fmt.Errorf("%w: %w", retention.ErrFenced, err)
	}
	return n, err
}
