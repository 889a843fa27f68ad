package startup

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"scheduler/internal/fence"
)

// Store opens the store with open and checks its schema, waiting while its server cannot be
// reached; a schema behind this binary is not waited for. name names the store in errors.
func Store(ctx context.Context, lg *zap.Logger, name string, open func(context.Context) (*fence.Store, error)) (*fence.Store, error) {
	srv := Server{What: "the store", Key: "store.dsn", Passes: fence.Unreachable, Logger: lg}
	return Wait(ctx, srv, func(ctx context.Context) (*fence.Store, error) {
		s, err := open(ctx)
		if err != nil {
			return nil, err
		}
		if err := s.CheckSchema(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return s, nil
	})
}
