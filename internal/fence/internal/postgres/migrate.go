package postgres

import (
	"context"

	"go.uber.org/zap"

	"scheduler/migrations"
)

// Migrate applies the embedded Postgres migrations the schema lacks.
func (p *Backend) Migrate(ctx context.Context, lg *zap.Logger) error {
	return migrations.UpPostgres(ctx, lg, p.pool, p.schema)
}

// AppliedVersions returns the migration versions recorded as applied; no
// version table yields none.
func (p *Backend) AppliedVersions(ctx context.Context) ([]int64, error) {
	return migrations.AppliedPostgres(ctx, p.pool, p.schema)
}

// Identity returns the store's random id and the database's name.
func (p *Backend) Identity(ctx context.Context) (id, database string, err error) {
	return migrations.IdentityPostgres(ctx, p.pool, p.schema)
}
