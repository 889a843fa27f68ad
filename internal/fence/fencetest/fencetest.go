// Package fencetest opens real, migrated stores for the tests of the packages that use the
// store, so that each of them runs its cases on both backends the same way.
package fencetest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"scheduler/internal/fence"
	"scheduler/internal/testenv"
)

// Stores returns an opener of a migrated store for each backend, by name: "postgres", a
// database on the shared Postgres test cluster, and "sqlite", a file in the test's temporary
// directory. Each store is closed when its test ends.
func Stores() map[string]func(tb testing.TB) *fence.Store {
	return map[string]func(tb testing.TB) *fence.Store{
		"postgres": func(tb testing.TB) *fence.Store { return Open(tb, fence.Config{DSN: testenv.MustDatabase(tb)}) },
		"sqlite": func(tb testing.TB) *fence.Store {
			return Open(tb, fence.Config{Path: filepath.Join(tb.TempDir(), "scheduler.db")})
		},
	}
}

// Open opens the store cfg names, applies the migrations and closes it when the test ends; any
// failure ends the test.
func Open(tb testing.TB, cfg fence.Config) *fence.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := fence.Open(ctx, cfg, zaptest.NewLogger(tb))
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		tb.Fatalf("migrate store: %v", err)
	}
	return s
}

// Each runs test as a subtest on a migrated store of each backend, named for the backend, with
// a context that ends after timeout: the store's users run each case on both backends alike.
func Each(t *testing.T, timeout time.Duration, test func(ctx context.Context, t *testing.T, s *fence.Store)) {
	t.Helper()
	for name, open := range Stores() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			test(ctx, t, s)
		})
	}
}
