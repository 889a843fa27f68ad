package fence

import (
	"context"
	"fmt"
	"slices"

	"scheduler"
	"scheduler/migrations"
)

// Migrate applies the migrations this binary embeds (package migrations)
// that the store lacks, into Config.Schema on Postgres, with goose's version
// table in that schema too. It is idempotent, and safe when several replicas migrate at once: on
// Postgres they queue on an advisory lock and the later ones find nothing
// to do; on SQLite they take turns on a lock file beside the database, and
// the later ones find nothing to do.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.b.Migrate(ctx, s.lg); err != nil {
		return fmt.Errorf("migrate %s store: %w", s.b.Dialect(), err)
	}
	return nil
}

// CheckSchema returns an error wrapping ErrSchemaBehind, saying to run
// `scheduler migrate`, if the store lacks a migration this binary needs. A
// store migrated further by a newer binary passes: migrations only add.
func (s *Store) CheckSchema(ctx context.Context) error {
	applied, err := s.b.AppliedVersions(ctx)
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
	if s.b.Dialect() == scheduler.SQLite {
		where = fmt.Sprintf("database %s", s.cfg.Path)
	}
	return fmt.Errorf("%w: %s store, %s: migrations %v of %v are not applied: run `scheduler migrate` first",
		ErrSchemaBehind, s.b.Dialect(), where, missing, want)
}

// versions returns the migration versions this binary embeds.
func (s *Store) versions() ([]int64, error) {
	if s.b.Dialect() == scheduler.SQLite {
		return migrations.Versions(migrations.SQLite())
	}
	return migrations.Versions(migrations.Postgres())
}
