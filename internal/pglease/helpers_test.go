package pglease

import (
	"bytes"
	"context"
	"database/sql"
	"io/fs"
	"path"
	"testing"
	"testing/fstest"
	"text/template"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/lease/leasetest"
	"scheduler/internal/testenv"
	"scheduler/migrations"
)

const testSchema = "sched"

func TestMain(m *testing.M) { testenv.Main(m) }

// mustStore returns the DSN of a fresh database whose testSchema has the
// store's migrations applied, as the store's own migrate would.
func mustStore(t *testing.T) string {
	t.Helper()
	dsn := testenv.MustDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := mustPool(t, dsn)
	if _, err := pool.Exec(ctx, `CREATE SCHEMA `+testSchema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	src := migrations.Postgres()
	names, err := fs.Glob(src, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	data := struct{ Schema, Name string }{Schema: pgx.Identifier{testSchema}.Sanitize(), Name: testSchema}
	out := fstest.MapFS{}
	for _, n := range names {
		text, err := fs.ReadFile(src, n)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := template.Must(template.New(n).Parse(string(text))).Execute(&buf, data); err != nil {
			t.Fatalf("render %s: %v", n, err)
		}
		out[path.Base(n)] = &fstest.MapFile{Data: buf.Bytes()}
	}
	db := stdlib.OpenDBFromPool(pool)
	defer func() { _ = db.Close() }()
	migrate(t, ctx, db, out)
	return dsn
}

func migrate(t *testing.T, ctx context.Context, db *sql.DB, fsys fs.FS) {
	t.Helper()
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithTableName(testSchema+".goose_db_version"), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatalf("goose: %v", err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
}

// mustPool opens a pool on dsn, closed in t.Cleanup.
func mustPool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newCampaigner returns a Campaigner for node on pool with TTL ttl.
func newCampaigner(t *testing.T, pool *pgxpool.Pool, node string, ttl time.Duration) *Campaigner {
	t.Helper()
	c, err := New(pool, Config{Schema: testSchema, Name: "scheduler", Node: node, TTL: ttl}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// contract is the Postgres backend under leasetest's contract tests.
var contract = leasetest.Contract{
	Start:        func(t *testing.T) leasetest.Server { return newServer(t) },
	NotConfirmed: ErrNotConfirmed,
	NoLeader:     ErrNoLeader,
}

// server is a fresh database with the store's migrations, and a pool on it.
type server struct {
	dsn  string
	pool *pgxpool.Pool
}

func newServer(t *testing.T) *server {
	dsn := mustStore(t)
	return &server{dsn: dsn, pool: mustPool(t, dsn)}
}

func (s *server) Campaigner(t *testing.T, node string, ttl time.Duration, ev Events) leasetest.Contender {
	c := newCampaigner(t, s.pool, node, ttl)
	c.cfg.Events = ev
	return c
}

func (s *server) Proxied(t *testing.T, node string, ttl time.Duration) (leasetest.Contender, *testenv.Proxy) {
	proxied, proxy := testenv.ProxiedDSN(t, s.dsn)
	return newCampaigner(t, mustPool(t, proxied), node, ttl), proxy
}

// Contending waits a moment: a follower's first attempt comes at once.
func (s *server) Contending(*testing.T, int) { time.Sleep(300 * time.Millisecond) }

func (s *server) Take(t *testing.T) {
	if _, err := s.pool.Exec(context.Background(), `UPDATE sched.leader_lease SET holder = 'someone else'`); err != nil {
		t.Fatal(err)
	}
}

func (s *server) Supplant(t *testing.T) {
	if _, err := s.pool.Exec(context.Background(), `UPDATE sched.leader_lease SET holder = 'x', token = token + 1`); err != nil {
		t.Fatal(err)
	}
}

func (s *server) ReadLeader(*testing.T) error {
	_, err := ReadLeader(context.Background(), s.pool, testSchema, "scheduler")
	return err
}

func (s *server) Observer(t *testing.T) leasetest.Observer {
	o, err := NewObserver(s.pool, testSchema, "scheduler", time.Second, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return leasetest.View(o, func(l Leader) scheduler.Term { return scheduler.Term{Token: l.Token, Node: l.Node} })
}
