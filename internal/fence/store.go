package fence

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"scheduler"
	"scheduler/internal/fence/internal/postgres"
	"scheduler/internal/fence/internal/sqlite"
	"scheduler/internal/fence/internal/tables"
)

// Config configures a Store.
type Config struct {
	// DSN is the Postgres connection string (URL or key=value). Empty
	// selects the embedded SQLite store at Path.
	DSN string
	// JobDSN, optional, is a second Postgres connection string on which sql
	// jobs' statements run (FencedStatements), as a login role with no
	// rights on the scheduler's schema beyond USAGE and EXECUTE on
	// fence_verify. It needs DSN; SQLite refuses it.
	JobDSN string
	// Path is the SQLite database file, used when DSN is empty. It is
	// created if missing; its directory must exist.
	Path string
	// Schema is the Postgres schema of the scheduler's own tables and
	// functions, and of the migration version table. Default "scheduler".
	// It must be a lower-case SQL identifier that is not a reserved word.
	// SQLite has no schemas and ignores it.
	Schema string
	// RaiseTimeout bounds how long RaiseAll waits for older writers of one
	// job (Postgres lock_timeout). Default 10s.
	RaiseTimeout time.Duration
	// IdleInTransactionTimeout is set as idle_in_transaction_session_timeout
	// on the store's own Postgres sessions unless the DSN sets it: a process
	// frozen inside a fenced transaction then loses its session, and its
	// locks, after this long, so it cannot block a new leader's raise for
	// ever. Default 60s; negative leaves the server's setting.
	IdleInTransactionTimeout time.Duration
	// MaxConns is the Postgres pool size. Default: the DSN's pool_max_conns,
	// else 16.
	MaxConns int32
	// Now returns the current time, for the ledger's timestamps. Default
	// time.Now.
	Now func() time.Time

	tracer pgx.QueryTracer // tests count round trips with it
}

// Defaults of Config.
const (
	DefaultSchema                   = "scheduler"
	DefaultRaiseTimeout             = 10 * time.Second
	DefaultIdleInTransactionTimeout = 60 * time.Second
)

// schemaPattern is the accepted form of Config.Schema: it needs no quoting,
// so it can also be embedded in goose's version table name.
var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (c Config) withDefaults() (Config, error) {
	if c.Schema == "" {
		c.Schema = DefaultSchema
	}
	if !schemaPattern.MatchString(c.Schema) {
		return c, fmt.Errorf("schema %q: want a lower-case identifier matching %s", c.Schema, schemaPattern)
	}
	if c.JobDSN != "" && c.DSN == "" {
		return c, errors.New("a job DSN needs a Postgres store: SQLite has no roles")
	}
	if c.DSN == "" && c.Path == "" {
		return c, errors.New("neither a Postgres DSN nor a SQLite path is set")
	}
	if c.RaiseTimeout == 0 {
		c.RaiseTimeout = DefaultRaiseTimeout
	}
	if c.RaiseTimeout < time.Millisecond {
		return c, fmt.Errorf("raise timeout %s: want at least 1ms", c.RaiseTimeout)
	}
	if c.IdleInTransactionTimeout == 0 {
		c.IdleInTransactionTimeout = DefaultIdleInTransactionTimeout
	}
	if c.MaxConns < 0 {
		return c, fmt.Errorf("max conns %d: want >= 0", c.MaxConns)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// Store is the fence and the run ledger on Postgres or on the embedded
// SQLite store. It is safe for concurrent use.
type Store struct {
	cfg Config
	lg  *zap.Logger
	b   backend
}

// backend is what differs between Postgres and SQLite: package postgres
// and package sqlite implement it. Its methods make one attempt; Store
// validates input, retries and wraps errors.
type backend interface {
	Dialect() scheduler.Dialect
	ParallelWriters() bool
	Close()
	// Retryable reports an error after which the attempt is made again (a
	// serialization failure or deadlock).
	Retryable(err error) bool

	// Fenced runs fn in one transaction that entered job's fence with token.
	Fenced(ctx context.Context, job string, token int64, fn func(scheduler.Tx) error) error
	// Raise raises the fences of jobs to token and returns each job's fence
	// afterwards. It commits only if every fence equals token.
	Raise(ctx context.Context, jobs []string, token int64) (map[string]int64, error)
	// Fences returns the stored fences of jobs (all jobs when empty).
	Fences(ctx context.Context, jobs []string) (map[string]int64, error)
	// Held returns the jobs of jobs whose raise to token would wait for another session's
	// lock on their fence, as the server's lock table shows it now.
	Held(ctx context.Context, jobs []string, token int64) ([]string, error)
	// Statements runs a sql job's text, under role when set, in one
	// transaction fenced with token for job and returns the rows it wrote.
	Statements(ctx context.Context, job string, token int64, role, text string) (int64, error)
	// XactStatus returns what the server knows of a transaction whose commit was in doubt:
	// "committed", "aborted", "in progress", or "" when it cannot tell.
	XactStatus(ctx context.Context, xid string) (string, error)
	// ResetFence removes job's fence.
	ResetFence(ctx context.Context, job string) error
	// Clock reads the server's clock; false where the store keeps no time of its own (SQLite,
	// which runs in the process).
	Clock(ctx context.Context) (time.Time, bool, error)
	// ResetHint says how an operator removes every fence of this store.
	ResetHint() string
	// RunSecret returns the secret of the run runID (digits), empty where
	// the store has none (see Store.RunSecret).
	RunSecret(ctx context.Context, runID string) (string, error)

	Migrate(ctx context.Context, lg *zap.Logger) error
	// AppliedVersions returns the migration versions recorded as applied; no
	// version table yields none.
	AppliedVersions(ctx context.Context) ([]int64, error)
	// Identity returns the random id the migrations created, and the database's name where the
	// store has one.
	Identity(ctx context.Context) (id, database string, err error)

	ledger
	backfill
	outbox
	runReads
}

var (
	_ backend = (*postgres.Backend)(nil)
	_ backend = (*sqlite.Backend)(nil)
)

// Open connects to the store that cfg selects: Postgres when cfg.DSN is set,
// else SQLite at cfg.Path. It does not migrate; see Migrate and CheckSchema.
func Open(ctx context.Context, cfg Config, lg *zap.Logger) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if lg == nil {
		lg = zap.NewNop()
	}
	s := &Store{cfg: cfg, lg: lg.Named("fence")}
	if cfg.DSN != "" {
		s.b, err = postgres.Open(ctx, postgres.Config{DSN: cfg.DSN, JobDSN: cfg.JobDSN, Schema: cfg.Schema,
			RaiseTimeout: cfg.RaiseTimeout, IdleInTransactionTimeout: cfg.IdleInTransactionTimeout,
			MaxConns: cfg.MaxConns, Tracer: cfg.tracer})
	} else {
		s.b, err = sqlite.Open(ctx, sqlite.Config{Path: cfg.Path, Now: cfg.Now})
	}
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	return s, nil
}

// Close releases the store's connections.
func (s *Store) Close() { s.b.Close() }

// Dialect reports the SQL dialect of the store.
func (s *Store) Dialect() scheduler.Dialect { return s.b.Dialect() }

// ParallelWriters reports whether fenced transactions with the same token
// run concurrently. True on Postgres: writers share the fence. False on
// SQLite: it has one writer at a time, so every fenced transaction is serial
// with every other write (which also makes the fence trivially correct).
func (s *Store) ParallelWriters() bool { return s.b.ParallelWriters() }

// now returns the ledger's current time, truncated to the microseconds both
// backends store.
func (s *Store) now() time.Time { return tables.NormTime(s.cfg.Now()) }

// The store is the runner's ledger as it is: the runner and the job kinds use it without a
// translation.
var _ scheduler.Ledger = (*Store)(nil)
