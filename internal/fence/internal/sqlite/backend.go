package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite" // also the "sqlite" database/sql driver, which the readers use

	"scheduler"
	"scheduler/internal/fence/internal/tables"
	"scheduler/internal/fence/internal/verdict"
)

// Backend is the embedded store: one SQLite file in WAL mode. Writes go
// through a pool of one connection whose transactions are BEGIN IMMEDIATE,
// so they take SQLite's write lock at BEGIN and run one at a time in this
// process (and, through busy_timeout, with other processes). The fence check
// is done in Go inside that transaction: nothing can write between the
// check and the commit. Reads use a separate pool and are not blocked.
type Backend struct {
	w, r  *sql.DB
	guard *textGuard // the writer's, for sql jobs' texts
	dsn   string     // of the writer, without _txlock
	path  string     // the database file
	now   func() time.Time
}

// sqliteBusyTimeout is how long a write waits for another process holding
// the write lock, in milliseconds.
const sqliteBusyTimeout = 10000

// Config is what the SQLite backend needs of the store's configuration.
type Config struct {
	// Path is the database file; it is created if missing.
	Path string
	// Now returns the current time, for the times a fence is raised at.
	Now func() time.Time
}

// Open opens the database at cfg.Path: a writer of one connection and a
// pool of readers. It does not migrate.
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	if strings.ContainsAny(cfg.Path, "?#") {
		return nil, fmt.Errorf("sqlite path %q: must not contain '?' or '#'", cfg.Path)
	}
	base := fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)", cfg.Path, sqliteBusyTimeout)
	dsn := base + "&_pragma=journal_mode(WAL)"
	wc, err := sqlite.NewConnector(dsn + "&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", cfg.Path, err)
	}
	guard := &textGuard{}
	w := sql.OpenDB(guardedConnector{Connector: wc, g: guard})
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := w.PingContext(ctx); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", cfg.Path, err)
	}
	r, err := sql.Open("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", cfg.Path, err)
	}
	r.SetMaxOpenConns(4)
	return &Backend{w: w, r: r, guard: guard, dsn: dsn, path: cfg.Path, now: cfg.Now}, nil
}

// Dialect reports scheduler.SQLite.
func (l *Backend) Dialect() scheduler.Dialect { return scheduler.SQLite }

// ParallelWriters reports false: SQLite has one writer at a time.
func (l *Backend) ParallelWriters() bool { return false }

// Retryable reports false: a write waits for the write lock instead of
// failing to serialize.
func (l *Backend) Retryable(error) bool { return false }

// Close closes the writer and the readers.
func (l *Backend) Close() {
	_ = l.r.Close()
	_ = l.w.Close()
}

// RunSecret returns no secret: SQLite has no roles and no outbox_enqueue,
// so no run proves itself to it.
func (l *Backend) RunSecret(context.Context, string) (string, error) { return "", nil }

// XactStatus is never asked of SQLite: its commits run in the process, so none is in doubt.
func (l *Backend) XactStatus(context.Context, string) (string, error) {
	return "", errors.New("sqlite: no transaction is in doubt")
}

// ResetHint says how an operator removes every fence of this store.
func (l *Backend) ResetHint() string {
	return "SQLite: DELETE FROM job_fence; in the store's database file"
}

// write runs fn in one IMMEDIATE transaction and commits it.
func (l *Backend) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// fencedWrite runs fn in one IMMEDIATE transaction that entered the fences
// of jobs with token, and commits it.
func (l *Backend) fencedWrite(ctx context.Context, jobs []string, token int64, fn func(tx *sql.Tx) error) error {
	return l.write(ctx, func(tx *sql.Tx) error {
		if err := l.enter(ctx, tx, jobs, token); err != nil {
			return err
		}
		return fn(tx)
	})
}

// enter checks, and raises if lower, the fences of jobs inside tx. The
// fences are read in one query; only those below token are written.
func (l *Backend) enter(ctx context.Context, tx *sql.Tx, jobs []string, token int64) error {
	jobs = tables.Distinct(jobs)
	list, err := json.Marshal(jobs)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT job, token FROM job_fence WHERE job IN (SELECT value FROM json_each($1))`, string(list))
	if err != nil {
		return fmt.Errorf("read fences of %d jobs: %w", len(jobs), err)
	}
	fences, err := readFences(rows, nil)
	if err != nil {
		return fmt.Errorf("read fences of %d jobs: %w", len(jobs), err)
	}
	for _, j := range jobs {
		cur, ok := fences[j]
		switch {
		case ok && cur > token:
			return verdict.Stale(j, token, cur)
		case ok && cur == token:
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO job_fence (job, token, raised_at) VALUES ($1, $2, $3)
			ON CONFLICT (job) DO UPDATE SET token = excluded.token, raised_at = excluded.raised_at
			WHERE job_fence.token < excluded.token`, j, token, tables.NormTime(l.now()).UnixMicro()); err != nil {
			return fmt.Errorf("raise fence of job %q to %d: %w", j, token, err)
		}
	}
	return nil
}

// Fenced runs fn in one IMMEDIATE transaction that entered job's fence
// with token, raising it when it is below.
func (l *Backend) Fenced(ctx context.Context, job string, token int64, fn func(scheduler.Tx) error) error {
	return l.fencedWrite(ctx, []string{job}, token, func(tx *sql.Tx) error { return fn(sqlTx{tx}) })
}

// errRegressed makes write roll back when raise finds a higher fence.
var errRegressed = errors.New("fence above token")

// Raise raises the fences of jobs to token in one transaction, unless one
// is above token, and returns each job's fence afterwards.
func (l *Backend) Raise(ctx context.Context, jobs []string, token int64) (map[string]int64, error) {
	fences := make(map[string]int64, len(jobs))
	err := l.write(ctx, func(tx *sql.Tx) error {
		f, err := txFences(ctx, tx, jobs)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if f[j] > token {
				fences = f
				return errRegressed
			}
		}
		if err := l.enter(ctx, tx, jobs, token); err != nil {
			return err
		}
		for _, j := range jobs {
			fences[j] = token
		}
		return nil
	})
	if errors.Is(err, errRegressed) {
		return fences, nil
	}
	return fences, err
}

// Held returns no job: a raise waits for the file's one write lock (BEGIN IMMEDIATE), never for
// the lock of one job's fence, so no job is held apart from the others.
func (l *Backend) Held(context.Context, []string, int64) ([]string, error) { return nil, nil }

// Fences returns the stored fences of jobs, or of every job when empty.
func (l *Backend) Fences(ctx context.Context, jobs []string) (map[string]int64, error) {
	tx, err := l.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	return txFences(ctx, tx, jobs)
}

// txFences reads the fences of jobs, or all fences when jobs is empty.
func txFences(ctx context.Context, tx *sql.Tx, jobs []string) (map[string]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT job, token FROM job_fence`)
	if err != nil {
		return nil, err
	}
	return readFences(rows, jobs)
}

// readFences reads and closes rows of (job, token): those of jobs, or every
// row when jobs is empty.
func readFences(rows *sql.Rows, jobs []string) (map[string]int64, error) {
	type fence struct {
		job   string
		token int64
	}
	all, err := tables.CollectSQL(rows, func(row tables.RowScanner) (f fence, err error) { return f, row.Scan(&f.job, &f.token) })
	if err != nil {
		return nil, err
	}
	want := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		want[j] = true
	}
	fences := make(map[string]int64, len(all))
	for _, f := range all {
		if len(jobs) == 0 || want[f.job] {
			fences[f.job] = f.token
		}
	}
	return fences, nil
}

// ResetFence removes job's fence.
func (l *Backend) ResetFence(ctx context.Context, job string) error {
	return l.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM job_fence WHERE job = $1`, job)
		return err
	})
}

// ErrNoRoles refuses a role on SQLite.
var ErrNoRoles = errors.New("sqlite has no roles: a role needs a Postgres store")

// Statements runs text, a sql job's, inside the single writer's
// transaction after the fence check and returns the rows it changed. A
// role is refused: SQLite has none.
func (l *Backend) Statements(ctx context.Context, job string, token int64, role, text string) (int64, error) {
	if role != "" {
		return 0, fmt.Errorf("role %q: %w", role, ErrNoRoles)
	}
	var n int64
	err := l.fencedWrite(ctx, []string{job}, token, func(tx *sql.Tx) error {
		// The driver's RowsAffected is the last statement's; the
		// connection's running total covers them all.
		var before, after int64
		if err := tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&before); err != nil {
			return err
		}
		mark, err := markTx(ctx, tx)
		if err != nil {
			return err
		}
		if err := l.guard.guarding(mark, func() error {
			_, err := tx.ExecContext(ctx, text)
			return err
		}); err != nil {
			return err
		}
		if err := stillInTx(ctx, tx, mark); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&after); err != nil {
			return err
		}
		n = after - before
		return nil
	})
	return n, err
}

// markTx opens a savepoint of a random name in tx, by which stillInTx
// knows the transaction again after a text: a text can end the transaction
// and begin another (COMMIT; BEGIN), but cannot name the savepoint.
func markTx(ctx context.Context, tx *sql.Tx) (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("mark the statements' transaction: %w", err)
	}
	mark := `"s` + hex.EncodeToString(b) + `"`
	if _, err := tx.ExecContext(ctx, `SAVEPOINT `+mark); err != nil {
		return "", fmt.Errorf("mark the statements' transaction: %w", err)
	}
	return mark, nil
}

// stillInTx returns verdict.ErrTxEnded when the statements ended the transaction themselves (a
// COMMIT or ROLLBACK in the text, whether or not they began another): the savepoint of markTx
// is then gone.
func stillInTx(ctx context.Context, tx *sql.Tx, mark string) error {
	_, err := tx.ExecContext(ctx, `RELEASE `+mark)
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "no such savepoint"):
		return verdict.ErrTxEnded
	}
	return fmt.Errorf("check that the statements kept the transaction: %w", err)
}

// Clock reports that SQLite keeps no time of its own: it runs in the process, on its clock.
func (l *Backend) Clock(context.Context) (time.Time, bool, error) { return time.Time{}, false, nil }
