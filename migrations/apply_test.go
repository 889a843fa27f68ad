package migrations

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"go.uber.org/zap/zaptest"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// TestVersions reads the version of every migration from its file name, and
// refuses a file without one.
func TestVersions(t *testing.T) {
	got, err := Versions(fstest.MapFS{
		"00002_b.sql": {Data: []byte("-- b")},
		"00001_a.sql": {Data: []byte("-- a")},
		"README":      {Data: []byte("not a migration")},
	})
	if err != nil || !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("Versions = %v (err %v), want [1 2]", got, err)
	}
	if got, err := Versions(fstest.MapFS{"first_a.sql": {Data: []byte("-- a")}}); err == nil {
		t.Fatalf("Versions of a file without a number = %v, want an error", got)
	}
	pg, err := Versions(Postgres())
	if err != nil {
		t.Fatal(err)
	}
	lite, err := Versions(SQLite())
	if err != nil || !slices.Equal(pg, lite) {
		t.Fatalf("SQLite versions %v (err %v), want the Postgres ones %v", lite, err, pg)
	}
}

// TestPostgresIn fills in the schema of every Postgres migration, quoted
// where it names the schema.
func TestPostgresIn(t *testing.T) {
	fsys, err := PostgresIn("jobs_store")
	if err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("rendered migrations %v (err %v), want some", names, err)
	}
	for _, n := range names {
		text, err := fs.ReadFile(fsys, n)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(text), "{{") {
			t.Fatalf("%s: a template action is left: %s", n, text)
		}
	}
	first, err := fs.ReadFile(fsys, names[0])
	if err != nil || !strings.Contains(string(first), `"jobs_store"`) {
		t.Fatalf("%s does not name the quoted schema (err %v)", names[0], err)
	}
}

// TestUpSQLite migrates a real SQLite file, twice: the second finds nothing
// to do, and the applied versions are the embedded ones.
func TestUpSQLite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "store.db")+"?_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if got, err := AppliedSQLite(ctx, db); err != nil || len(got) != 0 {
		t.Fatalf("applied versions of an empty file = %v (err %v), want none", got, err)
	}
	lg := zaptest.NewLogger(t)
	for range 2 {
		if err := UpSQLite(ctx, lg, db); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	want, err := Versions(SQLite())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := AppliedSQLite(ctx, db); err != nil || !slices.Equal(got, want) {
		t.Fatalf("applied versions = %v (err %v), want %v", got, err, want)
	}
}
