package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/internal/fence"
	"scheduler/internal/jobs"
	"scheduler/internal/testenv"
)

// jobKindsTimeout bounds each test of this file.
const jobKindsTimeout = 2 * time.Minute

// realStore is a store as the daemon opens it, selected by the store section of a config.
type realStore struct {
	name string
	// yaml is the config's store selection: store.dsn, or data_dir for SQLite.
	yaml string
	// dsn is the Postgres DSN as the superuser; empty for SQLite.
	dsn string
	// db reads the store's tables directly, outside the scheduler.
	db func(t *testing.T) *sql.DB
}

// forEachRealStore runs test against a fresh Postgres database and a fresh SQLite store.
func forEachRealStore(t *testing.T, test func(t *testing.T, rs realStore)) {
	t.Run("Postgres", func(t *testing.T) {
		dsn := testenv.MustDatabase(t)
		test(t, realStore{name: "postgres", yaml: fmt.Sprintf("store: {dsn: %q}\n", dsn), dsn: dsn,
			db: func(t *testing.T) *sql.DB { return openDB(t, "pgx", dsn) }})
	})
	t.Run("SQLite", func(t *testing.T) {
		dir := t.TempDir()
		test(t, realStore{name: "sqlite", yaml: fmt.Sprintf("data_dir: %q\n", dir),
			db: func(t *testing.T) *sql.DB { return openDB(t, "sqlite", filepath.Join(dir, "scheduler.db")) }})
	})
}

func openDB(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// count returns the single integer q selects.
func count(t *testing.T, db *sql.DB, q string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jobKindsTimeout)
	defer cancel()
	var n int
	if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// leader is a term of the real runner over a table built as the daemon builds it.
type leader struct {
	t      *testing.T
	cfg    *config.Config
	store  *fence.Store
	runner *jobs.Runner
	table  map[string]scheduler.Executor
	token  int64
}

// lead loads the config (the store section plus jobs), opens and migrates its store as the
// daemon and `scheduler migrate` do, builds the table with the store as the daemon does and leads a
// term with token until the end of the test.
func lead(t *testing.T, storeYAML, jobsYAML string, token int64) *leader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jobKindsTimeout)
	defer cancel()
	if !strings.Contains(storeYAML, "data_dir:") {
		storeYAML = fmt.Sprintf("data_dir: %q\n", t.TempDir()) + storeYAML
	}
	loaded, err := config.LoadTable(configtest.Write(t, storeYAML+jobsYAML), os.Environ())
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	cfg, table := loaded.Config, loaded.Table
	lg := zaptest.NewLogger(t)
	s, err := createStore(ctx, cfg, lg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	l := &leader{t: t, cfg: cfg, store: s, table: map[string]scheduler.Executor{}, token: token}
	for _, sp := range table {
		l.table[sp.Name] = sp.Executor
	}
	l.runner, err = jobs.New(table, jobs.Options{Node: "n1", Ledger: s, Logger: lg.Named("runner")})
	if err != nil {
		t.Fatal(err)
	}
	termCtx, endTerm := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.runner.Lead(termCtx, token) }()
	t.Cleanup(func() {
		endTerm()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("term: %v", err)
		}
	})
	return l
}

// run triggers job once and returns its ledger row once it has finished.
func (l *leader) run(job string) scheduler.Run {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jobKindsTimeout)
	defer cancel()
	at := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	for {
		err := l.runner.Trigger(ctx, job, at)
		if err == nil {
			break
		}
		if !errors.Is(err, jobs.ErrNotLeading) {
			l.t.Fatalf("trigger %s: %v", job, err)
		}
		select {
		case <-ctx.Done():
			l.t.Fatalf("trigger %s: the term never started: %v", job, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	for {
		runs, err := l.store.History(ctx, job, 10)
		if err != nil {
			l.t.Fatal(err)
		}
		for _, r := range runs {
			if r.Manual && r.FinishedAt != nil {
				return r
			}
		}
		select {
		case <-ctx.Done():
			l.t.Fatalf("run of %s never finished: %+v", job, runs)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// stale runs job's executor, as the daemon built it, with a token older than the term's.
func (l *leader) stale(job string) error {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jobKindsTimeout)
	defer cancel()
	// Bound to the store, as the runner binds each attempt to its ledger.
	_, err := l.table[job].Execute(ctx, scheduler.Attempt{Job: job, Token: l.token - 1, Attempt: 1, RunID: "999999999",
		Slot: time.Date(2026, 4, 1, 2, 0, 0, 0, time.UTC), Fencer: l.store})
	return err
}

func wantRun(t *testing.T, r scheduler.Run, status scheduler.Status, token int64) {
	t.Helper()
	if r.Status != status || r.Token != token || r.Attempt != 1 {
		t.Fatalf("run %s: status %s token %d attempt %d (error %q, output %q); want %s with token %d, attempt 1",
			r.Job, r.Status, r.Token, r.Attempt, r.Error, r.Output, status, token)
	}
}

// TestJobKinds_RealStore runs every job kind, built from a config the way the daemon builds it,
// through the real runner against the real store, Postgres and SQLite, and checks the ledger row
// and what the job wrote.
func TestJobKinds_RealStore(t *testing.T) {
	forEachRealStore(t, func(t *testing.T, rs realStore) {
		var (
			mu      sync.Mutex
			headers []http.Header
		)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			headers = append(headers, r.Header.Clone())
			mu.Unlock()
			_, _ = fmt.Fprint(w, "received")
		}))
		defer srv.Close()
		const token = 100
		l := lead(t, rs.yaml, fmt.Sprintf(`
defaults: {schedule: "@yearly"}
jobs:
  - name: exec
    type: exec
    command: [sh, -c, 'echo "token=$SCHEDULER_FENCE_TOKEN job=$SCHEDULER_JOB"']
  - name: http
    type: http
    url: %s/hook
  - name: sql-one
    type: sql
    sql: "INSERT INTO stock_scans (sku, quantity) VALUES ('one', 1)"
  - name: sql-many
    type: sql
    sql: |
      INSERT INTO stock_scans (sku, quantity) VALUES ('many', 1), ('many', 2);
      SELECT count(*) FROM stock_scans;
      UPDATE stock_scans SET quantity = quantity + 10 WHERE sku = 'many';
  - name: sql-second-fails
    type: sql
    sql: |
      INSERT INTO stock_scans (sku, quantity) VALUES ('rolled-back', 1);
      INSERT INTO no_such_table VALUES (1);
  - name: invoices
    type: builtin
    builtin: invoices
    params: {clients: 3, delay: 0s, period: slot}
  - name: stock
    type: builtin
    builtin: stock
`, srv.URL), token)
		db := rs.db(t)
		// staleFenced runs job under a stale token: it is fenced, and query still counts want
		// rows.
		staleFenced := func(t *testing.T, job, query string, want int) {
			t.Helper()
			if err := l.stale(job); !errors.Is(err, scheduler.ErrFenced) {
				t.Fatalf("stale token: err %v, want ErrFenced", err)
			}
			if n := count(t, db, query); n != want {
				t.Fatalf("a stale token of %s wrote: %d rows, want %d", job, n, want)
			}
		}

		t.Run("Exec", func(t *testing.T) {
			r := l.run("exec")
			wantRun(t, r, scheduler.StatusSucceeded, token)
			if !strings.Contains(r.Output, "token=100 job=exec") {
				t.Fatalf("output %q, want the token and the job", r.Output)
			}
		})
		t.Run("HTTP", func(t *testing.T) {
			r := l.run("http")
			wantRun(t, r, scheduler.StatusSucceeded, token)
			mu.Lock()
			defer mu.Unlock()
			if len(headers) != 1 || headers[0].Get("Fencing-Token") != "100" || headers[0].Get("X-Scheduler-Job") != "http" ||
				headers[0].Get("Idempotency-Key") == "" {
				t.Fatalf("requests' headers %v, want one with Fencing-Token 100, X-Scheduler-Job http and an Idempotency-Key", headers)
			}
		})
		t.Run("SQLOneStatement", func(t *testing.T) {
			r := l.run("sql-one")
			wantRun(t, r, scheduler.StatusSucceeded, token)
			if r.Output != "1 rows affected" || count(t, db, `SELECT count(*) FROM stock_scans WHERE sku = 'one'`) != 1 {
				t.Fatalf("output %q, rows %d; want 1 row", r.Output, count(t, db, `SELECT count(*) FROM stock_scans WHERE sku = 'one'`))
			}
			staleFenced(t, "sql-one", `SELECT count(*) FROM stock_scans WHERE sku = 'one'`, 1)
		})
		t.Run("SQLSeveralStatements", func(t *testing.T) {
			r := l.run("sql-many")
			wantRun(t, r, scheduler.StatusSucceeded, token)
			if r.Output != "4 rows affected" {
				t.Fatalf("output %q, want the 2 rows inserted and the 2 updated", r.Output)
			}
			if n := count(t, db, `SELECT count(*) FROM stock_scans WHERE sku = 'many' AND quantity > 10`); n != 2 {
				t.Fatalf("%d rows inserted and updated, want 2", n)
			}
			staleFenced(t, "sql-many", `SELECT count(*) FROM stock_scans WHERE sku = 'many'`, 2)
		})
		t.Run("SQLFailingSecondStatementRollsBackTheFirst", func(t *testing.T) {
			r := l.run("sql-second-fails")
			wantRun(t, r, scheduler.StatusFailed, token)
			if !strings.Contains(r.Error, "no_such_table") {
				t.Fatalf("error %q, want the second statement's", r.Error)
			}
			if n := count(t, db, `SELECT count(*) FROM stock_scans WHERE sku = 'rolled-back'`); n != 0 {
				t.Fatalf("the first statement of a failed run was kept: %d rows", n)
			}
		})
		t.Run("Invoices", func(t *testing.T) {
			r := l.run("invoices")
			wantRun(t, r, scheduler.StatusSucceeded, token)
			if n := count(t, db, `SELECT count(*) FROM invoices WHERE token = 100`); n != 3 {
				t.Fatalf("%d invoices with token 100, want 3", n)
			}
			staleFenced(t, "invoices", `SELECT count(*) FROM invoices`, 3)
		})
		t.Run("Stock", func(t *testing.T) {
			r := l.run("stock")
			wantRun(t, r, scheduler.StatusSucceeded, token)
			if n := count(t, db, `SELECT count(*) FROM stock_report WHERE token = 100`); n != 2 {
				t.Fatalf("%d report rows with token 100, want one per SKU scanned (2)", n)
			}
			staleFenced(t, "stock", `SELECT count(*) FROM stock_report WHERE token = 100`, 2)
		})
	})
}
