package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite"

	"scheduler"
	"scheduler/internal/testenv"
	"scheduler/migrations"
)

func TestPermanent(t *testing.T) {
	base := errors.New("bad request")
	err := scheduler.Permanent(base)
	if !errors.Is(err, base) {
		t.Fatalf("errors.Is(Permanent(e), e) = false")
	}
	if !scheduler.IsPermanent(err) || !scheduler.IsPermanent(fmt.Errorf("call: %w", err)) {
		t.Fatalf("IsPermanent(Permanent(e)) = false, also when wrapped")
	}
	if scheduler.IsPermanent(base) || scheduler.IsPermanent(nil) {
		t.Fatalf("IsPermanent of an unmarked error = true")
	}
	if err.Error() != base.Error() {
		t.Fatalf("message = %q, want %q", err.Error(), base.Error())
	}
	if scheduler.Permanent(nil) != nil {
		t.Fatalf("Permanent(nil) != nil")
	}
}

// testStore is a store as the jobs see it: a Fencer over a real database, Postgres or SQLite,
// holding the application tables of the migrations. Its fence check is a stand-in for the
// store's: a test_fence row per job that a newer token raises and an older one is rejected by.
type testStore struct {
	name string
	f    *testFencer
	// query runs a read outside any job transaction.
	query func(ctx context.Context, q string, args ...any) scheduler.Row
	// exec runs a write outside any job transaction.
	exec func(ctx context.Context, q string, args ...any) error
}

// testFencer implements Fencer. afterCommit, when set, runs after the n-th committed call (from
// 1); wrap, when set, replaces the Tx the job writes through.
type testFencer struct {
	begin       func(ctx context.Context) (scheduler.Tx, func(context.Context) error, func(context.Context) error, error)
	check       string // the fence statement; returns the fence after the check
	mu          sync.Mutex
	calls       int
	commits     int
	afterCommit func(n int)
	wrap        func(scheduler.Tx) scheduler.Tx
}

func (f *testFencer) Fenced(ctx context.Context, job string, token int64, fn func(ctx context.Context, tx scheduler.Tx) error) error {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	tx, commit, rollback, err := f.begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = rollback(context.WithoutCancel(ctx)) }()
	var fence int64
	if err := tx.QueryRow(ctx, f.check, job, token).Scan(&fence); err != nil {
		return fmt.Errorf("fence check: %w", err)
	}
	if fence != token {
		return fmt.Errorf("job %s token %d older than fence %d: %w", job, token, fence, scheduler.ErrFenced)
	}
	if f.wrap != nil {
		tx = f.wrap(tx)
	}
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	f.mu.Lock()
	f.commits++
	n := f.commits
	f.mu.Unlock()
	if f.afterCommit != nil {
		f.afterCommit(n)
	}
	return nil
}

// Calls reports how many times Fenced was called.
func (f *testFencer) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// forEachStore runs test against a fresh Postgres database and a fresh SQLite file, each holding
// the application tables exactly as the migrations create them.
func forEachStore(t *testing.T, test func(t *testing.T, st *testStore)) {
	t.Run("Postgres", func(t *testing.T) { test(t, mustPostgresStore(t)) })
	t.Run("SQLite", func(t *testing.T) { test(t, mustSQLiteStore(t)) })
}

// raiseFence sets the job's fence to token, as a newer leader's first write would.
func (st *testStore) raiseFence(ctx context.Context, t *testing.T, job string, token int64) {
	t.Helper()
	if err := st.exec(ctx, `UPDATE test_fence SET token = $2 WHERE job = $1`, job, token); err != nil {
		t.Fatalf("raise fence of %s to %d: %v", job, token, err)
	}
	if err := st.exec(ctx, `INSERT INTO test_fence (job, token) SELECT $1, $2
		WHERE NOT EXISTS (SELECT 1 FROM test_fence WHERE job = $1)`, job, token); err != nil {
		t.Fatalf("raise fence of %s to %d: %v", job, token, err)
	}
}

// count returns SELECT COUNT(*) of q.
func (st *testStore) count(ctx context.Context, t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := st.query(ctx, q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// appTablesUp returns the Up part of the application tables' migration for a dialect.
func appTablesUp(t *testing.T, fsys fs.FS) string {
	t.Helper()
	b, err := fs.ReadFile(fsys, "00003_app_tables.sql")
	if err != nil {
		t.Fatalf("read app tables migration: %v", err)
	}
	s := string(b)
	_, up, ok := strings.Cut(s, "-- +goose Up")
	up, _, ok2 := strings.Cut(up, "-- +goose Down")
	if !ok || !ok2 || strings.Contains(up, "{{") {
		t.Fatalf("app tables migration is not plain Up/Down SQL any more")
	}
	return up
}

func mustPostgresStore(t *testing.T) *testStore {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	pool, err := pgxpool.New(ctx, testenv.MustDatabase(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(pool.Close)
	ddl := appTablesUp(t, migrations.Postgres()) + `
		CREATE TABLE test_fence (job text PRIMARY KEY, token bigint NOT NULL);`
	if _, err := pool.Exec(ctx, ddl); err != nil {
		t.Fatalf("create tables: %v", err)
	}
	return &testStore{
		name: "postgres",
		f: &testFencer{
			begin: func(ctx context.Context) (scheduler.Tx, func(context.Context) error, func(context.Context) error, error) {
				tx, err := pool.Begin(ctx)
				if err != nil {
					return nil, nil, nil, err
				}
				return pgTx{tx}, tx.Commit, tx.Rollback, nil
			},
			check: `INSERT INTO test_fence AS f (job, token) VALUES ($1, $2)
				ON CONFLICT (job) DO UPDATE SET token = GREATEST(f.token, excluded.token)
				RETURNING token`,
		},
		query: func(ctx context.Context, q string, args ...any) scheduler.Row { return pool.QueryRow(ctx, q, args...) },
		exec: func(ctx context.Context, q string, args ...any) error {
			_, err := pool.Exec(ctx, q, args...)
			return err
		},
	}
}

func mustSQLiteStore(t *testing.T) *testStore {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "store.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	db.SetMaxOpenConns(1) // one writer, as the embedded store has
	t.Cleanup(func() { _ = db.Close() })
	ddl := appTablesUp(t, migrations.SQLite()) + `
		CREATE TABLE test_fence (job TEXT PRIMARY KEY, token INTEGER NOT NULL);`
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		t.Fatalf("create tables: %v", err)
	}
	return &testStore{
		name: "sqlite",
		f: &testFencer{
			begin: func(ctx context.Context) (scheduler.Tx, func(context.Context) error, func(context.Context) error, error) {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return nil, nil, nil, err
				}
				commit := func(context.Context) error { return tx.Commit() }
				rollback := func(context.Context) error { return tx.Rollback() }
				return sqlTx{tx}, commit, rollback, nil
			},
			check: `INSERT INTO test_fence AS f (job, token) VALUES ($1, $2)
				ON CONFLICT (job) DO UPDATE SET token = MAX(f.token, excluded.token)
				RETURNING token`,
		},
		query: func(ctx context.Context, q string, args ...any) scheduler.Row {
			return db.QueryRowContext(ctx, q, args...)
		},
		exec: func(ctx context.Context, q string, args ...any) error {
			_, err := db.ExecContext(ctx, q, args...)
			return err
		},
	}
}

// pgTx adapts pgx.Tx to Tx.
type pgTx struct{ tx pgx.Tx }

func (t pgTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (t pgTx) QueryRow(ctx context.Context, q string, args ...any) scheduler.Row {
	return t.tx.QueryRow(ctx, q, args...)
}

// sqlTx adapts a database/sql transaction to Tx.
type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t sqlTx) QueryRow(ctx context.Context, q string, args ...any) scheduler.Row {
	return t.tx.QueryRowContext(ctx, q, args...)
}

// failingTx passes the first pass Execs through and fails the next one with errInjected.
type failingTx struct {
	scheduler.Tx
	pass   int
	execs  int
	before func(tx scheduler.Tx) // runs in the transaction just before the failure
}

var errInjected = errors.New("injected failure")

func (t *failingTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	t.execs++
	if t.execs > t.pass {
		if t.before != nil {
			t.before(t.Tx)
		}
		return 0, errInjected
	}
	return t.Tx.Exec(ctx, q, args...)
}

var _ io.Writer = (*Capture)(nil)

// FencedStatements is not used by the jobs that write through a testFencer.
func (f *testFencer) FencedStatements(context.Context, string, int64, string, string) (int64, error) {
	return 0, errors.New("test fencer: no statements")
}

func (pgTx) Query(context.Context, string, ...any) (scheduler.Rows, error) {
	return nil, errors.New("pgTx: no queries")
}

func (pgTx) Dialect() scheduler.Dialect { return scheduler.Postgres }

func (sqlTx) Query(context.Context, string, ...any) (scheduler.Rows, error) {
	return nil, errors.New("sqlTx: no queries")
}

func (sqlTx) Dialect() scheduler.Dialect { return scheduler.SQLite }
