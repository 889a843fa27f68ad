package fence

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"scheduler"
	"scheduler/migrations"
)

// Migrate applies the migrations this binary embeds (package migrations)
// that the store lacks, into Config.Schema on Postgres, with goose's version
// table in that schema too. It is idempotent, and safe when several replicas migrate at once: on
// Postgres they queue on an advisory lock and the later ones find nothing
// to do; on SQLite the write lock serializes them and every statement is
// IF NOT EXISTS.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.b.migrate(ctx, s.lg); err != nil {
		return fmt.Errorf("migrate %s store: %w", s.b.dialect(), err)
	}
	return nil
}

// CheckSchema returns an error wrapping ErrSchemaBehind, saying to run
// `scheduler migrate`, if the store lacks a migration this binary needs. A
// store migrated further by a newer binary passes: migrations only add.
func (s *Store) CheckSchema(ctx context.Context) error {
	applied, err := s.b.appliedVersions(ctx)
	if err != nil {
		return fmt.Errorf("check store schema: %w", err)
	}
	want, err := s.versions()
	if err != nil {
		return fmt.Errorf("check store schema: %w", err)
	}
	var missing []int64
	for _, v := range want {
		if !slices.Contains(applied, v) {
			missing = append(missing, v)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	where := fmt.Sprintf("schema %q", s.cfg.Schema)
	if s.b.dialect() == scheduler.SQLite {
		where = fmt.Sprintf("database %s", s.cfg.Path)
	}
	return fmt.Errorf("%w: %s store, %s: migrations %v of %v are not applied: run `scheduler migrate` first",
		ErrSchemaBehind, s.b.dialect(), where, missing, want)
}

// versions returns the migration versions this binary embeds.
func (s *Store) versions() ([]int64, error) {
	if s.b.dialect() == scheduler.SQLite {
		return migrations.Versions(migrations.SQLite())
	}
	return migrations.Versions(migrations.Postgres())
}

func (p *pgBackend) migrate(ctx context.Context, lg *zap.Logger) error {
	return migrations.UpPostgres(ctx, lg, p.pool, p.schema)
}

func (p *pgBackend) appliedVersions(ctx context.Context) ([]int64, error) {
	return migrations.AppliedPostgres(ctx, p.pool, p.schema)
}

func (l *liteBackend) migrate(ctx context.Context, lg *zap.Logger) error {
	// A separate handle: goose needs more than the writer's one connection.
	db, err := sql.Open("sqlite", l.dsn+"&_txlock=immediate")
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	return migrations.UpSQLite(ctx, lg, db)
}

func (l *liteBackend) appliedVersions(ctx context.Context) ([]int64, error) {
	return migrations.AppliedSQLite(ctx, l.r)
}
