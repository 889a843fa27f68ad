package fence

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/fence/internal/postgres"
	"scheduler/internal/fence/internal/sqlite"
	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testTimeout bounds every test that touches a server.
const testTimeout = 60 * time.Second

// backendCase is one store implementation under the conformance suite.
type backendCase struct {
	name string
	// fresh creates an empty database and returns a function that opens
	// migrated stores on it (cfg with its DSN or Path filled in).
	fresh func(t *testing.T) func(cfg Config) *Store
}

// backends returns Postgres (a database on the shared test cluster) and
// SQLite (a file in a temporary directory).
func backends() []backendCase {
	return []backendCase{
		{name: "postgres", fresh: func(t *testing.T) func(Config) *Store {
			dsn := testenv.MustDatabase(t)
			return func(cfg Config) *Store {
				cfg.DSN = dsn
				return mustOpen(t, cfg)
			}
		}},
		{name: "sqlite", fresh: func(t *testing.T) func(Config) *Store {
			path := filepath.Join(t.TempDir(), "scheduler.db")
			return func(cfg Config) *Store {
				cfg.Path = path
				return mustOpen(t, cfg)
			}
		}},
	}
}

// mustOpen opens and migrates a store and closes it at the end of the test.
func mustOpen(t testing.TB, cfg Config) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s, err := Open(ctx, cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s
}

// testCtx returns a context bounded by testTimeout.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// lockWaiters returns a count that grows when an operation on s starts
// waiting for a lock: on Postgres the number of backends of the database
// now waiting for a heavyweight lock; on SQLite the number of waits for the
// single write connection so far.
func lockWaiters(ctx context.Context, s *Store) (int64, error) {
	switch b := s.b.(type) {
	case *postgres.Backend:
		var n int64
		err := b.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return n, err
	case *sqlite.Backend:
		return b.Writer().Stats().WaitCount, nil
	}
	return 0, fmt.Errorf("unknown backend %T", s.b)
}

// awaitBlocked waits until lockWaiters exceeds base, or done is closed
// (the operation finished instead of blocking), or ctx ends. It reports
// whether the operation blocked.
func awaitBlocked(ctx context.Context, s *Store, base int64, done <-chan struct{}) (bool, error) {
	for {
		n, err := lockWaiters(ctx, s)
		if err != nil {
			return false, err
		}
		if n > base {
			return true, nil
		}
		select {
		case <-done:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// pgExec runs sql on a fresh connection to dsn.
func pgExec(t testing.TB, ctx context.Context, dsn, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("exec %q: %v", sql, err)
	}
}

// eachStore runs test, in a subtest per backend, on a fresh migrated store
// opened with cfg.
func eachStore(t *testing.T, cfg Config, test func(t *testing.T, ctx context.Context, s *Store)) {
	t.Helper()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := b.fresh(t)(cfg)
			test(t, testCtx(t), s)
		})
	}
}

// inBackground runs op in a goroutine; its error arrives on the returned
// channel, and done is closed, once op has returned.
func inBackground(op func() error) (errc <-chan error, done <-chan struct{}) {
	ec, dc := make(chan error, 1), make(chan struct{})
	go func() {
		ec <- op()
		close(dc)
	}()
	return ec, dc
}

// untilEntered runs op in a goroutine and returns once op has called
// entered (later calls do nothing), with op's error to come on errc; or,
// if op returns without entering, with that error (or one saying so).
func untilEntered(op func(entered func()) error) (errc <-chan error, err error) {
	ec, in := make(chan error, 1), make(chan struct{})
	var once sync.Once
	go func() { ec <- op(func() { once.Do(func() { close(in) }) }) }()
	select {
	case <-in:
		return ec, nil
	case err := <-ec:
		select {
		case <-in: // entered, then returned
			done := make(chan error, 1)
			done <- err
			return done, nil
		default:
		}
		if err == nil {
			err = errors.New("returned without entering")
		}
		return nil, err
	}
}

// claimAndFinish claims slots on node n1 with token and completes their runs
// with status.
func claimAndFinish(t *testing.T, ctx context.Context, s *Store, token int64, slots []scheduler.SlotKey, status scheduler.Status) {
	t.Helper()
	res, err := s.ClaimMany(ctx, token, "n1", slots)
	if err != nil {
		t.Fatal(err)
	}
	cs := make([]scheduler.Completion, len(res))
	for i, r := range res {
		cs[i] = scheduler.Completion{RunID: r.Run.RunID, Job: r.Run.Job, Status: status}
	}
	if _, err := s.CompleteMany(ctx, token, cs); err != nil {
		t.Fatal(err)
	}
}

// pgCount returns the count that query, a SELECT count(*), reads on s's
// Postgres pool.
func pgCount(t *testing.T, ctx context.Context, s *Store, query string) int {
	t.Helper()
	var n int
	if err := s.b.(*postgres.Backend).Pool().QueryRow(ctx, query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
