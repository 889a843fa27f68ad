package testenv

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestQueryCounter: statements sent as one multi-statement simple query
// count as one 'Q' message, statements of the extended protocol as a parse
// and a sync each, and the results come back through the counter intact.
func TestQueryCounter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := MustDatabase(t)
	q := MustQueryCounter(t, dsn)
	if !strings.HasPrefix(q.DSN(), "postgres://postgres@"+q.Addr()+"/") {
		t.Fatalf("DSN() = %q, want the database's DSN at %s", q.DSN(), q.Addr())
	}

	t.Run("SimpleQuery", func(t *testing.T) {
		cfg, err := pgx.ParseConfig(q.DSN())
		if err != nil {
			t.Fatal(err)
		}
		cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatalf("connect through the counter: %v", err)
		}
		defer func() { _ = conn.Close(context.Background()) }()
		before := q.Count('Q')
		if _, err := conn.Exec(ctx, `CREATE TABLE qc (x int); INSERT INTO qc VALUES (1); INSERT INTO qc VALUES (2)`); err != nil {
			t.Fatal(err)
		}
		if got := q.Count('Q') - before; got != 1 {
			t.Fatalf("Q messages for three statements in one Exec = %d, want 1", got)
		}
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM qc`).Scan(&n); err != nil || n != 2 {
			t.Fatalf("rows = %d, %v; want 2", n, err)
		}
	})

	t.Run("ExtendedProtocol", func(t *testing.T) {
		conn := Connect(ctx, t, q.DSN())
		parses, syncs, queries := q.Count('P'), q.Count('S'), q.Count('Q')
		var v int
		if err := conn.QueryRow(ctx, `SELECT $1::int + 1`, 41).Scan(&v); err != nil || v != 42 {
			t.Fatalf("select = %d, %v; want 42", v, err)
		}
		if q.Count('P') == parses || q.Count('S') == syncs {
			t.Fatalf("parse/sync counts did not move (P %d→%d, S %d→%d)", parses, q.Count('P'), syncs, q.Count('S'))
		}
		if got := q.Count('Q') - queries; got != 0 {
			t.Fatalf("Q messages for an extended-protocol query = %d, want 0", got)
		}
	})
	t.Run("RefusesTLS", func(t *testing.T) {
		// prefer goes on in the clear; require gives up, as it would against a server
		// without TLS.
		conn := Connect(ctx, t, strings.Replace(q.DSN(), "sslmode=disable", "sslmode=prefer", 1))
		var v int
		if err := conn.QueryRow(ctx, `SELECT 1`).Scan(&v); err != nil || v != 1 {
			t.Fatalf("select over sslmode=prefer = %d, %v; want 1", v, err)
		}
		conn2, err := pgx.Connect(ctx, strings.Replace(q.DSN(), "sslmode=disable", "sslmode=require", 1))
		if err == nil {
			_ = conn2.Close(ctx)
			t.Fatal("sslmode=require connected through the counter, want refused")
		}
	})
}
