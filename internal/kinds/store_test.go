package kinds

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/testenv"
)

// testStore is the scheduler's real store, Postgres or SQLite, opened and migrated as the daemon
// does, so that it holds the application tables the kinds write. f is the Fencer the attempts of
// a test write through: the store itself, counted.
type testStore struct {
	name  string
	store *fence.Store
	f     *testFencer
}

// testFencer passes every fenced transaction to the real store, counting them. afterCommit, when
// set, runs after the n-th committed call (from 1); wrap, when set, replaces the Tx the job
// writes through: a test of a statement failing inside the transaction, a fault the real store
// cannot be made to produce at a chosen statement.
type testFencer struct {
	scheduler.Fencer
	mu          sync.Mutex
	calls       int
	commits     int
	afterCommit func(n int)
	wrap        func(scheduler.Tx) scheduler.Tx
}

func (f *testFencer) Fenced(ctx context.Context, job string, token int64, fn func(ctx context.Context, tx scheduler.Tx) error) error {
	f.mu.Lock()
	f.calls++
	wrap := f.wrap
	f.mu.Unlock()
	err := f.Fencer.Fenced(ctx, job, token, func(ctx context.Context, tx scheduler.Tx) error {
		if wrap != nil {
			tx = wrap(tx)
		}
		return fn(ctx, tx)
	})
	if err != nil {
		return err
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

// forEachStore runs test against a fresh Postgres database and a fresh SQLite file, each migrated
// as `scheduler migrate` does.
func forEachStore(t *testing.T, test func(t *testing.T, st *testStore)) {
	t.Run("Postgres", func(t *testing.T) {
		test(t, mustStore(t, "postgres", fence.Config{DSN: testenv.MustDatabase(t)}))
	})
	t.Run("SQLite", func(t *testing.T) {
		test(t, mustStore(t, "sqlite", fence.Config{Path: filepath.Join(t.TempDir(), "scheduler.db")}))
	})
}

func mustStore(t *testing.T, name string, cfg fence.Config) *testStore {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	s, err := fence.Open(ctx, cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return &testStore{name: name, store: s, f: &testFencer{Fencer: s}}
}

// readerJob is the job whose fence the tests' own reads and writes enter; no kind writes for it.
const readerJob = "test-reader"

// query runs a read outside any job's transaction and scans its one row into dest.
func (st *testStore) query(ctx context.Context, q string, args ...any) scheduler.Row {
	return rowFunc(func(dest ...any) error {
		return st.store.Fenced(ctx, readerJob, 1, func(ctx context.Context, tx scheduler.Tx) error {
			return tx.QueryRow(ctx, q, args...).Scan(dest...)
		})
	})
}

// exec runs a write outside any job's transaction.
func (st *testStore) exec(ctx context.Context, q string, args ...any) error {
	return st.store.Fenced(ctx, readerJob, 1, func(ctx context.Context, tx scheduler.Tx) error {
		_, err := tx.Exec(ctx, q, args...)
		return err
	})
}

// rowFunc is a Row made of its Scan.
type rowFunc func(dest ...any) error

func (f rowFunc) Scan(dest ...any) error { return f(dest...) }

// raiseFence raises the job's fence to token, as a newer leader's takeover does.
func (st *testStore) raiseFence(ctx context.Context, t *testing.T, job string, token int64) {
	t.Helper()
	if err := st.store.RaiseAll(ctx, []string{job}, token); err != nil {
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

// bound returns a with its fenced writes going to st's Fencer, as the runner binds an attempt
// to its ledger.
func (st *testStore) bound(a scheduler.Attempt) scheduler.Attempt {
	a.Fencer = st.f
	return a
}

// execute runs j on a, bound to the store, and fails the test unless it succeeds with the
// output want.
func (st *testStore) execute(ctx context.Context, t *testing.T, j scheduler.Executor, a scheduler.Attempt, want string) {
	t.Helper()
	out, err := j.Execute(ctx, st.bound(a))
	if err != nil {
		t.Fatalf("Execute token %d attempt %d: %v", a.Token, a.Attempt, err)
	}
	if out != want {
		t.Fatalf("output = %q, want %q", out, want)
	}
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
