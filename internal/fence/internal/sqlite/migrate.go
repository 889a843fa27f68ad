package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"syscall"
	"time"

	"go.uber.org/zap"

	"scheduler/migrations"
)

// Migrate applies the embedded SQLite migrations the database lacks. Processes migrating one
// file take turns on a lock file beside it: goose reads the applied versions before its first
// migration's transaction, so without the lock two of them would both apply a migration that
// cannot be written to run twice (an ADD COLUMN).
func (l *Backend) Migrate(ctx context.Context, lg *zap.Logger) error {
	unlock, err := lockFile(ctx, l.path+".migrate-lock")
	if err != nil {
		return err
	}
	defer unlock()
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

// Identity returns the store's random id; SQLite has no database name.
func (l *Backend) Identity(ctx context.Context) (id, database string, err error) {
	id, err = migrations.IdentitySQLite(ctx, l.r)
	return id, "", err
}

// lockFile takes an exclusive lock on the file at path, creating it, and returns its release.
// It waits for another holder until ctx ends.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil // closing releases the lock
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			_ = f.Close()
			return nil, fmt.Errorf("migration lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("migration lock %s: %w", path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
