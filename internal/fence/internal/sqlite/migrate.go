package sqlite

import (
	"context"
	"database/sql"

	"go.uber.org/zap"

	"scheduler/migrations"
)

// Migrate applies the embedded SQLite migrations the database lacks.
func (l *Backend) Migrate(ctx context.Context, lg *zap.Logger) error {
	// A separate handle: goose needs more than the writer's one connection.
	db, err := sql.Open("sqlite", l.dsn+"&_txlock=immediate")
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	return migrations.UpSQLite(ctx, lg, db)
}

// AppliedVersions returns the migration versions recorded as applied; no
// version table yields none.
func (l *Backend) AppliedVersions(ctx context.Context) ([]int64, error) {
	return migrations.AppliedSQLite(ctx, l.r)
}
