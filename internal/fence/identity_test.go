package fence

import (
	"path/filepath"
	"testing"

	"scheduler"
	"scheduler/internal/testenv"
)

// TestStore_Identity: a store's identity is created by its migration and kept by every later
// open and migration, and each new store has its own: another schema of the same database,
// another database, another SQLite file. This is what lets a replica configured with another
// store tell that it is not the deployment's.
func TestStore_Identity(t *testing.T) {
	ctx := testCtx(t)
	identity := func(s *Store) scheduler.StoreID {
		t.Helper()
		id, err := s.Identity(ctx, "test")
		if err != nil {
			t.Fatalf("identity: %v", err)
		}
		if id.ID == "" || id.Name != "test" {
			t.Fatalf("identity %+v: want an id and the name given", id)
		}
		return id
	}
	t.Run("Postgres", func(t *testing.T) {
		dsn := testenv.MustDatabase(t)
		first := identity(mustOpen(t, Config{DSN: dsn}))
		if first.Dialect != scheduler.Postgres || first.Schema != DefaultSchema || first.Database == "" {
			t.Fatalf("identity %+v: want postgres with the database and schema %q", first, DefaultSchema)
		}
		if again := identity(mustOpen(t, Config{DSN: dsn})); !again.Same(first) {
			t.Fatalf("identity after a second migration %v, want %v", again, first)
		}
		other := identity(mustOpen(t, Config{DSN: dsn, Schema: "elsewhere"}))
		if other.Same(first) || other.ID == first.ID || other.Schema != "elsewhere" || other.Database != first.Database {
			t.Fatalf("identity of another schema of the database %v, want another than %v", other, first)
		}
		db := identity(mustOpen(t, Config{DSN: testenv.MustDatabase(t)}))
		if db.Same(first) || db.ID == first.ID || db.Database == first.Database {
			t.Fatalf("identity of another database %v, want another than %v", db, first)
		}
	})
	t.Run("SQLite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "scheduler.db")
		first := identity(mustOpen(t, Config{Path: path}))
		if first.Dialect != scheduler.SQLite || first.Schema != "" || first.Database != "" {
			t.Fatalf("identity %+v: want sqlite without database or schema", first)
		}
		if again := identity(mustOpen(t, Config{Path: path})); !again.Same(first) {
			t.Fatalf("identity after a second migration %v, want %v", again, first)
		}
		if other := identity(mustOpen(t, Config{Path: filepath.Join(t.TempDir(), "scheduler.db")})); other.Same(first) {
			t.Fatalf("identity of another file %v, want another than %v", other, first)
		}
	})
}
