package fence

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"scheduler/internal/fence/internal/postgres"
	"scheduler/internal/testenv"
)

// openRaw opens a store without migrating it.
func openRaw(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := Open(testCtx(t), cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestMigrate_Concurrent: replicas migrating a fresh store at the same time
// all succeed (Postgres: several pools; SQLite: several handles on one
// file), the schema is then complete, and every migration is recorded once.
func TestMigrate_Concurrent(t *testing.T) {
	cases := map[string]func(t *testing.T) Config{
		"postgres": func(t *testing.T) Config { return Config{DSN: testenv.MustDatabase(t)} },
		"sqlite":   func(t *testing.T) Config { return Config{Path: filepath.Join(t.TempDir(), "s.db")} },
	}
	for name, cfgOf := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := cfgOf(t)
			ctx := testCtx(t)
			stores := []*Store{openRaw(t, cfg), openRaw(t, cfg), openRaw(t, cfg)}
			if err := stores[0].CheckSchema(ctx); !errors.Is(err, ErrSchemaBehind) || !strings.Contains(err.Error(), "scheduler migrate") {
				t.Fatalf("check of a fresh store: err %v, want ErrSchemaBehind saying to run scheduler migrate", err)
			}
			var wg sync.WaitGroup
			errs := make([]error, 2*len(stores))
			for i := range errs {
				wg.Go(func() { errs[i] = stores[i%len(stores)].Migrate(ctx) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("migration %d: %v", i, err)
				}
			}
			for _, s := range stores {
				if err := s.CheckSchema(ctx); err != nil {
					t.Fatalf("check after migrating: %v", err)
				}
			}
			want, err := stores[0].versions()
			if err != nil {
				t.Fatal(err)
			}
			got, err := stores[0].b.AppliedVersions(ctx)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("applied versions %v (err %v), want %v", got, err, want)
			}
			if name == "postgres" {
				var dup int
				err := stores[0].b.(*postgres.Backend).Pool().QueryRow(ctx, `SELECT count(*) - count(DISTINCT version_id)
					FROM scheduler.goose_db_version`).Scan(&dup)
				if err != nil || dup != 0 {
					t.Fatalf("versions recorded twice: %d (err %v)", dup, err)
				}
			}
			// And once more, sequentially: nothing to do is a success.
			if err := stores[1].Migrate(ctx); err != nil {
				t.Fatalf("migrating an up-to-date store: %v", err)
			}
			if err := stores[0].RaiseAll(ctx, []string{"x"}, 1); err != nil {
				t.Fatalf("using the migrated store: %v", err)
			}
		})
	}
}

// TestCheckSchema_Behind: a store that lacks the newest migration is
// reported with the versions missing.
func TestCheckSchema_Behind(t *testing.T) {
	s, _ := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	versions, err := s.versions()
	if err != nil {
		t.Fatal(err)
	}
	newest := versions[len(versions)-1]
	if _, err := s.b.(*postgres.Backend).Pool().Exec(ctx, `DELETE FROM scheduler.goose_db_version WHERE version_id = $1`, newest); err != nil {
		t.Fatal(err)
	}
	err = s.CheckSchema(ctx)
	if want := fmt.Sprintf("[%d]", newest); !errors.Is(err, ErrSchemaBehind) || !strings.Contains(err.Error(), want) {
		t.Fatalf("check with version %d missing: err %v, want ErrSchemaBehind listing %s", newest, err, want)
	}
	t.Logf("message: %v", err)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatalf("check after migrating again: %v", err)
	}
}

func TestOpen_Config(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []Config{
		{DSN: "postgres://x", Schema: "Scheduler"},
		{DSN: "postgres://x", Schema: "a-b"},
		{DSN: "postgres://x", Schema: `x"; DROP TABLE y; --`},
		{},
		{Path: "a?b"},
		{DSN: "postgres://x", RaiseTimeout: -1},
	} {
		if s, err := Open(ctx, cfg, nil); err == nil {
			s.Close()
			t.Errorf("open %+v: no error", cfg)
		}
	}
	// A keyword that goose could not use unquoted is refused by Migrate.
	s := openRaw(t, Config{DSN: testenv.MustDatabase(t), Schema: "select"})
	if err := s.Migrate(testCtx(t)); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("migrate into schema select: err %v, want a reserved-keyword error", err)
	}
}
