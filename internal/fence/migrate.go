package fence

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing/fstest" // an in-memory fs.FS for the rendered migrations, not a test helper
	"text/template"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"go.uber.org/zap"

	"scheduler"
	"scheduler/migrations"
)

// goose's version table; on Postgres it lives in the store's schema.
const versionTable = "goose_db_version"

// migrateLockKey names the advisory lock that serializes migrations of one
// database, whatever the schema: the application tables in public are
// shared by all schemas.
const migrateLockKey = `hashtextextended('scheduler migrate', 0)`

// Migrate applies the migrations this binary embeds that the store lacks.
// It is idempotent, and safe when several replicas migrate at once: on
// Postgres they queue on an advisory lock and the later ones find nothing
// to do; on SQLite the write lock serializes them and every statement is
// IF NOT EXISTS.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.b.migrate(ctx, s.lg); err != nil {
		return fmt.Errorf("migrate %s store: %w", s.b.dialect(), err)
	}
	return nil
}

// CheckSchema returns an error wrapping ErrSchemaBehind, saying to run
// `scheduler migrate`, if the store lacks a migration this binary needs. A
// store migrated further by a newer binary passes: migrations only add.
func (s *Store) CheckSchema(ctx context.Context) error {
	applied, err := s.b.appliedVersions(ctx)
	if err != nil {
		return fmt.Errorf("check store schema: %w", err)
	}
	want, err := s.versions()
	if err != nil {
		return fmt.Errorf("check store schema: %w", err)
	}
	var missing []int64
	for _, v := range want {
		if !slices.Contains(applied, v) {
			missing = append(missing, v)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	where := fmt.Sprintf("schema %q", s.cfg.Schema)
	if s.b.dialect() == scheduler.SQLite {
		where = fmt.Sprintf("database %s", s.cfg.Path)
	}
	return fmt.Errorf("%w: %s store, %s: migrations %v of %v are not applied: run `scheduler migrate` first",
		ErrSchemaBehind, s.b.dialect(), where, missing, want)
}

// versions returns the migration versions this binary embeds.
func (s *Store) versions() ([]int64, error) {
	fsys := migrations.Postgres()
	if s.b.dialect() == scheduler.SQLite {
		fsys = migrations.SQLite()
	}
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var vs []int64
	for _, n := range names {
		num, _, _ := strings.Cut(n, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("migration %s: no version number: %w", n, err)
		}
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs, nil
}

// renderPostgres returns the Postgres migrations with the schema filled in.
func renderPostgres(schema string) (fs.FS, error) {
	src := migrations.Postgres()
	names, err := fs.Glob(src, "*.sql")
	if err != nil {
		return nil, err
	}
	data := struct{ Schema, Name string }{Schema: pgx.Identifier{schema}.Sanitize(), Name: schema}
	out := fstest.MapFS{}
	for _, n := range names {
		text, err := fs.ReadFile(src, n)
		if err != nil {
			return nil, err
		}
		t, err := template.New(n).Option("missingkey=error").Parse(string(text))
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", n, err)
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return nil, fmt.Errorf("migration %s: %w", n, err)
		}
		out[path.Base(n)] = &fstest.MapFile{Data: buf.Bytes(), Mode: 0o444}
	}
	return out, nil
}

// gooseLogger sends goose's messages to zap.
type gooseLogger struct{ lg *zap.SugaredLogger }

func (g gooseLogger) Printf(format string, v ...any) { g.lg.Infof(strings.TrimSpace(format), v...) }
func (g gooseLogger) Fatalf(format string, v ...any) { g.lg.Errorf(strings.TrimSpace(format), v...) }

// up runs goose on db to the newest embedded version.
func up(ctx context.Context, lg *zap.Logger, dialect goose.Dialect, db *sql.DB, fsys fs.FS, table string) error {
	p, err := goose.NewProvider(dialect, db, fsys,
		goose.WithTableName(table),
		goose.WithDisableGlobalRegistry(true),
		goose.WithLogger(gooseLogger{lg.Named("migrate").Sugar()}),
	)
	if err != nil {
		return err
	}
	res, err := p.Up(ctx)
	if err != nil {
		return err
	}
	for _, r := range res {
		lg.Info("migration applied", zap.Int64("version", r.Source.Version), zap.String("file", r.Source.Path),
			zap.Duration("took", r.Duration))
	}
	return nil
}

func (p *pgBackend) migrate(ctx context.Context, lg *zap.Logger) (err error) {
	fsys, err := renderPostgres(p.schema)
	if err != nil {
		return err
	}
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The lock is a session lock: a session still holding it must never go
	// back to the pool, so on any doubt the session is closed.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+migrateLockKey+`)`); err != nil {
		_ = conn.Hijack().Close(context.WithoutCancel(ctx))
		return fmt.Errorf("take migration lock: %w", err)
	}
	defer func() {
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+migrateLockKey+`)`); uerr != nil {
			_ = conn.Hijack().Close(context.WithoutCancel(ctx))
			return
		}
		conn.Release()
	}()

	// goose names the version table unquoted, so the schema must not be a
	// keyword that needs quoting.
	var cat string
	err = conn.QueryRow(ctx, `SELECT catcode::text FROM pg_get_keywords() WHERE word = $1`, p.schema).Scan(&cat)
	if err == nil && (cat == "R" || cat == "T") {
		return fmt.Errorf("schema %q is a reserved SQL keyword: choose another store.schema", p.schema)
	}
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{p.schema}.Sanitize()); err != nil {
		return fmt.Errorf("create schema %q: %w", p.schema, err)
	}
	db := stdlib.OpenDBFromPool(p.pool)
	defer func() { _ = db.Close() }()
	return up(ctx, lg, goose.DialectPostgres, db, fsys, p.schema+"."+versionTable)
}

func (p *pgBackend) appliedVersions(ctx context.Context) ([]int64, error) {
	var exists bool
	table := pgx.Identifier{p.schema, versionTable}.Sanitize()
	if err := p.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, nil
	}
	rows, err := p.pool.Query(ctx, `SELECT version_id, is_applied FROM `+table+` ORDER BY id`)
	if err != nil {
		return nil, err
	}
	var (
		v       int64
		applied bool
	)
	state := map[int64]bool{}
	if _, err := pgx.ForEachRow(rows, []any{&v, &applied}, func() error {
		state[v] = applied
		return nil
	}); err != nil {
		return nil, err
	}
	return appliedOf(state), nil
}

func (l *liteBackend) migrate(ctx context.Context, lg *zap.Logger) error {
	// A separate handle: goose needs more than the writer's one connection.
	db, err := sql.Open("sqlite", l.dsn+"&_txlock=immediate")
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	return up(ctx, lg, goose.DialectSQLite3, db, migrations.SQLite(), versionTable)
}

func (l *liteBackend) appliedVersions(ctx context.Context) ([]int64, error) {
	var n int
	if err := l.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1`,
		versionTable).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	rows, err := l.r.QueryContext(ctx, `SELECT version_id, is_applied FROM `+versionTable+` ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	state := map[int64]bool{}
	for rows.Next() {
		var (
			v       int64
			applied bool
		)
		if err := rows.Scan(&v, &applied); err != nil {
			return nil, err
		}
		state[v] = applied
	}
	return appliedOf(state), rows.Err()
}

// appliedOf returns the versions (other than goose's 0) whose latest
// record says applied.
func appliedOf(state map[int64]bool) []int64 {
	var vs []int64
	for v, ok := range state {
		if ok && v > 0 {
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	return vs
}
