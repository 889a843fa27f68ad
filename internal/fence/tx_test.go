package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"scheduler"
)

// testTxPlaceholders: $N placeholders, sql.ErrNoRows and the dialect are
// the same through Tx on both backends.
func testTxPlaceholders(t *testing.T, open func(Config) *Store) {
	s := open(Config{})
	ctx := testCtx(t)
	err := s.Fenced(ctx, "tx", 1, func(_ context.Context, tx scheduler.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE tx_probe (a bigint, b text, c bigint)`); err != nil {
			return err
		}
		// $2 twice and out of order: bound by number, not position.
		n, err := tx.Exec(ctx, `INSERT INTO tx_probe (c, b, a) VALUES (CAST($2 AS bigint), $1, CAST($2 AS bigint) + 1)`, "x", 41)
		if err != nil || n != 1 {
			return fmt.Errorf("insert: n=%d err=%v", n, err)
		}
		var (
			a, c int64
			b    string
		)
		if err := tx.QueryRow(ctx, `SELECT a, b, c FROM tx_probe WHERE b = $1`, "x").Scan(&a, &b, &c); err != nil {
			return err
		}
		if a != 42 || b != "x" || c != 41 {
			return fmt.Errorf("row = %d %q %d, want 42 x 41", a, b, c)
		}
		rows, err := tx.Query(ctx, `SELECT a FROM tx_probe`)
		if err != nil {
			return err
		}
		count := 0
		for rows.Next() {
			count++
		}
		if err := rows.Close(); err != nil || count != 1 {
			return fmt.Errorf("query: %d rows, err %v", count, err)
		}
		var missing int64
		if err := tx.QueryRow(ctx, `SELECT a FROM tx_probe WHERE b = $1`, "none").Scan(&missing); !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("missing row: err %v, want sql.ErrNoRows", err)
		}
		if tx.Dialect() != s.Dialect() {
			return fmt.Errorf("tx dialect %s, store %s", tx.Dialect(), s.Dialect())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testStatementErrors: errors of fn's statements (the first one, which
// travels with the fence on Postgres, and later ones) are returned, nothing
// commits, and no connection is lost (the pool has two).
func testStatementErrors(t *testing.T, open func(Config) *Store) {
	s := open(Config{MaxConns: 2})
	ctx := testCtx(t)
	if err := ensureProbe(ctx, s); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		err := s.Fenced(ctx, "e", 5, func(_ context.Context, tx scheduler.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO no_such_table VALUES (1)`)
			return err
		})
		if err == nil || errors.Is(err, ErrStale) {
			t.Fatalf("first statement failing, call %d: err %v, want the statement's error", i, err)
		}
		err = s.Fenced(ctx, "e", 5, func(_ context.Context, tx scheduler.Tx) error {
			if err := insertProbe(ctx, tx, "e", 5, "doomed"); err != nil {
				return err
			}
			var n int
			return tx.QueryRow(ctx, `SELECT count(*) FROM no_such_table`).Scan(&n)
		})
		if err == nil || errors.Is(err, ErrStale) {
			t.Fatalf("second statement failing, call %d: err %v, want the statement's error", i, err)
		}
		rowsErr := s.Fenced(ctx, "e", 5, func(_ context.Context, tx scheduler.Tx) error {
			rows, err := tx.Query(ctx, `SELECT token FROM fence_probe`)
			if err != nil {
				return err
			}
			return rows.Close() // closed early: the transaction goes on
		})
		if rowsErr != nil {
			t.Fatalf("query closed early, call %d: %v", i, rowsErr)
		}
	}
	if n, err := probes(ctx, s, "e", 5, "doomed"); err != nil || n != 0 {
		t.Fatalf("rows of failed transactions: %d (err %v), want 0", n, err)
	}
}
