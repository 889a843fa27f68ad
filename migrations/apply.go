package migrations

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
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"go.uber.org/zap"
)

// VersionTable is goose's version table; on Postgres it lives in the
// store's schema.
const VersionTable = "goose_db_version"

// migrateLockKey names the advisory lock that serializes migrations of one
// database, whatever the schema: the application tables in public are
// shared by all schemas.
const migrateLockKey = `hashtextextended('scheduler migrate', 0)`

// PostgresIn returns the Postgres migrations with schema filled in.
func PostgresIn(schema string) (fs.FS, error) {
	src := Postgres()
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

// Versions returns the versions of the migrations in fsys, in order.
func Versions(fsys fs.FS) ([]int64, error) {
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

// UpPostgres applies the Postgres migrations that pool's database lacks
// into schema, creating it if needed. Concurrent calls on one database
// queue on an advisory lock, and the later ones find nothing to do.
func UpPostgres(ctx context.Context, lg *zap.Logger, pool *pgxpool.Pool, schema string) error {
	fsys, err := PostgresIn(schema)
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
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
	err = conn.QueryRow(ctx, `SELECT catcode::text FROM pg_get_keywords() WHERE word = $1`, schema).Scan(&cat)
	if err == nil && (cat == "R" || cat == "T") {
		return fmt.Errorf("schema %q is a reserved SQL keyword: choose another store.schema", schema)
	}
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("create schema %q: %w", schema, err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer func() { _ = db.Close() }()
	return up(ctx, lg, goose.DialectPostgres, db, fsys, schema+"."+VersionTable)
}

// UpSQLite applies the SQLite migrations that db lacks. Its caller lets one
// process at a time migrate a file: goose reads the applied versions before
// the write lock of its first migration, and an ADD COLUMN cannot run twice.
func UpSQLite(ctx context.Context, lg *zap.Logger, db *sql.DB) error {
	return up(ctx, lg, goose.DialectSQLite3, db, SQLite(), VersionTable)
}

// up runs goose on db to the newest version in fsys.
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

// gooseLogger sends goose's messages to zap.
type gooseLogger struct{ lg *zap.SugaredLogger }

func (g gooseLogger) Printf(format string, v ...any) { g.lg.Infof(strings.TrimSpace(format), v...) }
func (g gooseLogger) Fatalf(format string, v ...any) { g.lg.Errorf(strings.TrimSpace(format), v...) }

// AppliedPostgres returns the versions recorded as applied in schema's
// version table; none when there is no such table.
func AppliedPostgres(ctx context.Context, pool *pgxpool.Pool, schema string) ([]int64, error) {
	var exists bool
	table := pgx.Identifier{schema, VersionTable}.Sanitize()
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, nil
	}
	rows, err := pool.Query(ctx, `SELECT version_id, is_applied FROM `+table+` ORDER BY id`)
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

// AppliedSQLite returns the versions recorded as applied in db; none when
// there is no version table.
func AppliedSQLite(ctx context.Context, db *sql.DB) ([]int64, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1`,
		VersionTable).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT version_id, is_applied FROM `+VersionTable+` ORDER BY id`)
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
