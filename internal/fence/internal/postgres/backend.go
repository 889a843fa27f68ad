package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"scheduler"
	"scheduler/internal/fence/internal/verdict"
)

// Config is what the Postgres backend needs of the store's configuration,
// with the store's defaults applied and validated (see fence.Config).
type Config struct {
	// DSN is the connection string of the scheduler's own role.
	DSN string
	// JobDSN, optional, is where sql jobs' statements run.
	JobDSN string
	// Schema is the schema of the scheduler's tables and functions, a
	// validated lower-case identifier.
	Schema string
	// RaiseTimeout is the raise's lock_timeout.
	RaiseTimeout time.Duration
	// IdleInTransactionTimeout is set on the store's sessions unless the
	// DSN sets it; not positive leaves the server's setting.
	IdleInTransactionTimeout time.Duration
	// MaxConns is the pool size; zero takes the DSN's pool_max_conns, else
	// the default.
	MaxConns int32
	// Tracer, when set, traces every query of both pools.
	Tracer pgx.QueryTracer
}

// defaultMaxConns is the pool size when neither Config nor the DSN sets one.
const defaultMaxConns = 16

// Backend is the Postgres store: the fence functions of migration 1 and
// the ledger statements of ledger.go, on a pgx pool. Its methods make one
// attempt; fence.Store validates input, retries and wraps errors.
type Backend struct {
	pool *pgxpool.Pool
	// jobPool, when Config.JobDSN is set, is where sql jobs' statements
	// run (see Statements).
	jobPool *pgxpool.Pool
	// jobConns bounds the connections sql jobs' statements hold at once
	// (see jobConn).
	jobConns     chan struct{}
	schema       string // plain schema name (validated)
	raiseTimeout time.Duration
	q            pgStatements
	secrets      runKey
}

// pgStatements are the statements with the schema filled in.
type pgStatements struct {
	// lockShared and gate are how Fenced enters a fence: the job's shared
	// advisory lock, then, in a new statement and so a new snapshot, a read
	// of the fence that fails with division_by_zero unless it equals the
	// token (and returns no row if the job has no fence). lockKey is the
	// text whose hash is the lock key, the same as fence_check's. Their
	// functions and operators are named with their schema: a sql job's text
	// on the store's own connection runs in the transaction before the
	// check again, and a search_path it set could put its own first.
	lockShared, gate, lockKey string
	// check, when set, is a function Fenced enters the fence with instead
	// (fence_check's signature); tests use it to run fence variants.
	check string

	// verify is the check-only fence_verify, how the job connection's
	// role enters a fence.
	verify string

	checkAll, raise, fences, fencesAll, reset string
	held                                      string // see heldSQL
	// enterAll takes the shared locks of the fences of $1 (with the key prefix $2), as a writer
	// does, in the array's order: a raise ends with it (Raise).
	enterAll string
	ledgerStatements
}

// Open connects to the Postgres store cfg names and prepares the fence's
// and the ledger's statements on every new session.
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("parse postgres dsn: %w", err) // pgx redacts the password
	}
	var jc *pgxpool.Config
	if cfg.JobDSN != "" {
		if jc, err = pgxpool.ParseConfig(cfg.JobDSN); err != nil {
			return nil, fmt.Errorf("parse postgres job dsn: %w", err)
		}
		jobParams(jc, cfg)
	}
	switch {
	case cfg.MaxConns > 0:
		pc.MaxConns = cfg.MaxConns
	case !strings.Contains(cfg.DSN, "pool_max_conns"):
		pc.MaxConns = defaultMaxConns
	}
	if pc.MaxConns < 2 {
		pc.MaxConns = 2 // Migrate holds one session for its lock and migrates on another
	}
	sessionParams(pc, cfg, "scheduler")
	bind := ResetOnReadOnly(pc)
	q := pgSQL(cfg.Schema)
	pc.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		prepareWrites(ctx, conn, q)
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres %s: %w", pc.ConnConfig.Host, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to postgres %s:%d: %w", pc.ConnConfig.Host, pc.ConnConfig.Port, err)
	}
	bind(pool)
	b := &Backend{pool: pool, schema: cfg.Schema, raiseTimeout: cfg.RaiseTimeout, q: q,
		jobConns: make(chan struct{}, pc.MaxConns)}
	if jc != nil {
		bindJobs := ResetOnReadOnly(jc)
		// Not pinged: commands that never run a job do not connect with it.
		if b.jobPool, err = pgxpool.NewWithConfig(ctx, jc); err != nil {
			pool.Close()
			return nil, fmt.Errorf("connect to postgres %s for jobs: %w", jc.ConnConfig.Host, err)
		}
		bindJobs(b.jobPool)
		b.jobConns = make(chan struct{}, jc.MaxConns)
	}
	return b, nil
}

// jobParams sets the job connection's defaults.
func jobParams(jc *pgxpool.Config, cfg Config) {
	if !strings.Contains(cfg.JobDSN, "pool_max_conns") {
		jc.MaxConns = defaultMaxConns
	}
	sessionParams(jc, cfg, "scheduler-jobs")
}

// sessionParams names a pool's sessions unless its DSN does, and makes them
// time out idle in a transaction, so that a frozen process frees its locks.
func sessionParams(pc *pgxpool.Config, cfg Config, name string) {
	params := pc.ConnConfig.RuntimeParams
	if params["application_name"] == "" {
		params["application_name"] = name
	}
	if _, set := params["idle_in_transaction_session_timeout"]; !set && cfg.IdleInTransactionTimeout > 0 {
		params["idle_in_transaction_session_timeout"] = strconv.FormatInt(cfg.IdleInTransactionTimeout.Milliseconds(), 10)
	}
	if cfg.Tracer != nil {
		pc.ConnConfig.Tracer = cfg.Tracer
	}
}

// pgSQL returns the statements for schema.
func pgSQL(schema string) pgStatements {
	r := strings.NewReplacer("{s}", pgx.Identifier{schema}.Sanitize())
	return pgStatements{
		lockShared: `SELECT pg_catalog.pg_advisory_xact_lock_shared(pg_catalog.hashtextextended($1, 0))`,
		lockKey:    schema + ".job_fence:",
		gate: r.Replace(`SELECT 1 OPERATOR(pg_catalog./) (token OPERATOR(pg_catalog.=) $2)::int
			FROM {s}.job_fence WHERE job OPERATOR(pg_catalog.=) $1`),
		verify:    r.Replace(`SELECT {s}.fence_verify($1, $2)`),
		checkAll:  r.Replace(`SELECT {s}.fence_check_all($1::text[], $2)`),
		raise:     r.Replace(`SELECT fenced_job, fence FROM {s}.fence_raise($1::text[], $2)`),
		fences:    r.Replace(`SELECT job, token FROM {s}.job_fence WHERE job = ANY($1::text[])`),
		fencesAll: r.Replace(`SELECT job, token FROM {s}.job_fence`),
		reset:     r.Replace(`SELECT {s}.fence_admin_reset($1)`),
		held:      r.Replace(heldSQL),
		enterAll: `SELECT pg_catalog.pg_advisory_xact_lock_shared(pg_catalog.hashtextextended($2 OPERATOR(pg_catalog.||) j, 0))
			FROM pg_catalog.unnest($1::text[]) AS j`,
		ledgerStatements: pgLedgerSQL(r),
	}
}

// Dialect reports scheduler.Postgres.
func (p *Backend) Dialect() scheduler.Dialect { return scheduler.Postgres }

// ParallelWriters reports true: writers with the same token share the fence.
func (p *Backend) ParallelWriters() bool { return true }

// Close closes the pools.
func (p *Backend) Close() {
	p.pool.Close()
	if p.jobPool != nil {
		p.jobPool.Close()
	}
}

// ResetHint says how an operator removes every fence of this store.
func (p *Backend) ResetHint() string {
	s := pgx.Identifier{p.schema}.Sanitize()
	return fmt.Sprintf("SELECT %s.fence_admin_reset(job) FROM %s.job_fence", s, s)
}

// errNeedRaise reports a fence below the writer's token (or none).
var errNeedRaise = errors.New("fence below token")

// Fenced runs fn in a transaction fenced with token (see pgFencedTx), and
// raises the fence first when it is below token.
func (p *Backend) Fenced(ctx context.Context, job string, token int64, fn func(scheduler.Tx) error) error {
	return p.raising(ctx, job, token, func() error { return p.fencedOnce(ctx, job, token, fn) })
}

// raising runs once, a fenced transaction of job that returns errNeedRaise
// when the fence is below token. The fence is then raised in a short
// transaction of its own, which waits for the writers with older tokens as
// RaiseAll does, and once runs again.
func (p *Backend) raising(ctx context.Context, job string, token int64, once func() error) error {
	err := once()
	if !errors.Is(err, errNeedRaise) {
		return err
	}
	fences, err := p.Raise(ctx, []string{job}, token)
	if err != nil {
		return err
	}
	if f := fences[job]; f > token {
		return verdict.Stale(job, token, f)
	}
	err = once()
	if errors.Is(err, errNeedRaise) {
		return fmt.Errorf("fence of job %q fell below token %d again: was it reset?", job, token)
	}
	return err
}

// refused returns the verdict on a fenced transaction of job whose gate
// refused token: a stale error when the fence is above token, else
// errNeedRaise (the fence is below token, or missing).
func (p *Backend) refused(ctx context.Context, job string, token int64) error {
	fences, err := p.Fences(ctx, []string{job})
	switch f, ok := fences[job]; {
	case err != nil:
		return fmt.Errorf("read fence of job %q: %w", job, err)
	case ok && f > token:
		return verdict.Stale(job, token, f)
	}
	return errNeedRaise
}

// gateRefused reports an error of entering a fence that means the fence
// differs from the token: the gate's division by zero, no fence row, or
// fence_verify's JF001.
func gateRefused(err error) bool {
	return errors.Is(err, pgx.ErrNoRows) || isCode(err, "22012") || isCode(err, verdict.StaleErrorCode)
}

// Retryable reports a serialization failure or deadlock (SQLSTATE 40001,
// 40P01), which the store retries, unless the statements of a sql job ended
// the fenced transaction: what they ran after it may have committed, and a
// retry would run it again.
func (p *Backend) Retryable(err error) bool {
	return (isCode(err, "40001") || isCode(err, "40P01")) && !errors.Is(err, verdict.ErrTxEnded)
}

// isCode reports a Postgres error with SQLSTATE code.
func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// fencedOnce runs fn once and commits if both fn and the fence agree. The
// fence's verdict wins over fn's error: fn may have wrapped or dropped it.
func (p *Backend) fencedOnce(ctx context.Context, job string, token int64, fn func(scheduler.Tx) error) error {
	t := &pgFencedTx{p: p, job: job, token: token}
	defer t.rollback(ctx) // returns the connection; a no-op after commit
	err := fn(t)
	t.finish()
	switch {
	case t.verdict != nil:
		return t.verdict
	case err != nil:
		return err
	case t.tx == nil:
		// fn ran no statement; enter anyway, for the verdict.
		if _, err := t.enter(ctx, "", nil); err != nil {
			return err
		}
		t.finish()
	}
	if err := t.tx.Commit(ctx); err != nil {
		return p.commitErr(ctx, job, token, err)
	}
	return nil
}

// commitErr is the error of a fenced transaction's failed COMMIT. The fence was checked under
// a lock held until the commit, so a JF001 raised there is not the fence's: a deferred trigger
// of the transaction's own tables raised it, with a DETAIL of its choice. It names the job
// refused only when the store's own read finds job's fence above token; else it is the
// transaction's own error, which ends that run alone, as a job's error does, and never the
// term or another job.
func (p *Backend) commitErr(ctx context.Context, job string, token int64, err error) error {
	err = fmt.Errorf("commit: %w", err)
	if !isCode(err, verdict.StaleErrorCode) {
		return pgFenceErr(token, err)
	}
	fences, ferr := p.Fences(ctx, []string{job})
	switch f := fences[job]; {
	case ferr != nil:
		return fmt.Errorf("%w (raised at the commit, not by the fence of job %q as far as the store knows: reading it failed: %v)", err, job, ferr)
	case f > token:
		return verdict.Stale(job, token, f)
	}
	return fmt.Errorf("%w (raised at the commit by a trigger of the transaction's tables, not by the fence of job %q)", err, job)
}

// Raise runs fence_raise under the raise timeout and commits only if every
// fence now equals token.
//
// A fence already at token is not locked by fence_raise, so another session
// holding its lock exclusively (the advisory lock functions are PUBLIC) would
// go unseen, and every write of the term would then wait for it. So the raise
// ends by taking each fence's shared lock, as a writer does, under the same
// timeout: a raise succeeds only if the term can enter every fence. jobs come
// sorted (RaiseAll), the order in which the locks are taken.
func (p *Backend) Raise(ctx context.Context, jobs []string, token int64) (map[string]int64, error) {
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	queueTimeouts(b, p.raiseTimeout)
	fences := make(map[string]int64, len(jobs))
	b.Queue(p.q.raise, jobs, token).Query(func(rows pgx.Rows) error {
		var (
			job   string
			fence int64
		)
		_, err := pgx.ForEachRow(rows, []any{&job, &fence}, func() error {
			fences[job] = fence
			return nil
		})
		return err
	})
	b.Queue(p.q.enterAll, jobs, p.q.lockKey)
	br := p.pool.SendBatch(ctx, b)
	tx := br.Tx()
	defer func() { _ = tx.Rollback(ctx) }()
	if err := br.Close(); err != nil {
		return nil, pgFenceErr(token, err)
	}
	for _, j := range jobs {
		if fences[j] != token {
			return fences, nil // rolled back by the deferred Rollback
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, pgFenceErr(token, fmt.Errorf("commit: %w", err))
	}
	return fences, nil
}

// Fences returns the stored fences of jobs, or of every job when empty.
func (p *Backend) Fences(ctx context.Context, jobs []string) (map[string]int64, error) {
	var (
		rows pgx.Rows
		err  error
	)
	if len(jobs) == 0 {
		rows, err = p.pool.Query(ctx, p.q.fencesAll)
	} else {
		rows, err = p.pool.Query(ctx, p.q.fences, jobs)
	}
	if err != nil {
		return nil, err
	}
	fences := make(map[string]int64)
	var (
		job   string
		token int64
	)
	_, err = pgx.ForEachRow(rows, []any{&job, &token}, func() error {
		fences[job] = token
		return nil
	})
	return fences, err
}

// ResetFence removes job's fence with fence_admin_reset.
func (p *Backend) ResetFence(ctx context.Context, job string) error {
	_, err := p.pool.Exec(ctx, p.q.reset, job)
	return err
}

// staleDetail parses the DETAIL of fence_check's JF001 error.
var staleDetail = regexp.MustCompile(`^job=(.*) token=(-?\d+) fence=(\d*)$`)

// pgFenceErr turns the fence's SQLSTATEs into the verdict errors.
func pgFenceErr(token int64, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case verdict.StaleErrorCode:
		var (
			job   string
			fence int64
		)
		if m := staleDetail.FindStringSubmatch(pe.Detail); m != nil {
			job = m[1]
			fence, _ = strconv.ParseInt(m[3], 10, 64)
		}
		return verdict.Stale(job, token, fence)
	case "55P03": // lock_not_available: the raise's lock_timeout
		return fmt.Errorf("%w: %w", verdict.ErrRaiseTimeout, err)
	}
	return err
}

// Clock reads the server's clock.
func (p *Backend) Clock(ctx context.Context) (time.Time, bool, error) {
	var now time.Time
	err := p.pool.QueryRow(ctx, `SELECT pg_catalog.clock_timestamp()`).Scan(&now)
	return now, err == nil, err
}
