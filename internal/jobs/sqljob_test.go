package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"

	"scheduler"
)

// runnerFunc is a StatementRunner made of a function. The store's own runner is tested with the
// daemon's wiring, against real Postgres and SQLite.
type runnerFunc func(ctx context.Context, job string, token int64, role, statements string) (int64, error)

func (f runnerFunc) FencedStatements(ctx context.Context, job string, token int64, role, statements string) (int64, error) {
	return f(ctx, job, token, role, statements)
}

func TestSQLJob(t *testing.T) {
	run := scheduler.Attempt{Job: "adhoc", Token: 5, Attempt: 1, RunID: "r"}
	t.Run("PassesTheRunAndReportsRows", func(t *testing.T) {
		var got []any
		j, err := NewSQL(runnerFunc(func(_ context.Context, job string, token int64, role, text string) (int64, error) {
			got = []any{job, token, role, text}
			return 4, nil
		}), SQLConfig{Statements: "DELETE FROM t; INSERT INTO t VALUES (1)", Role: "nightly"})
		if err != nil {
			t.Fatal(err)
		}
		out, err := j.Execute(context.Background(), run)
		if err != nil || out != "4 rows affected" {
			t.Fatalf("Execute = %q, %v; want 4 rows affected", out, err)
		}
		want := []any{"adhoc", int64(5), "nightly", "DELETE FROM t; INSERT INTO t VALUES (1)"}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("runner got %v, want %v", got, want)
			}
		}
	})
	t.Run("KeepsTheFencedError", func(t *testing.T) {
		j, err := NewSQL(runnerFunc(func(context.Context, string, int64, string, string) (int64, error) {
			return 0, scheduler.ErrFenced
		}), SQLConfig{Statements: "SELECT 1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Execute(context.Background(), run); !errors.Is(err, scheduler.ErrFenced) || !strings.Contains(err.Error(), "token 5") {
			t.Fatalf("err = %v, want ErrFenced naming the token", err)
		}
	})
}

func TestNewSQL_Invalid(t *testing.T) {
	_, err := NewSQL(nil, SQLConfig{Statements: "  "})
	if err == nil || !strings.Contains(err.Error(), "statement runner: required") || !strings.Contains(err.Error(), "statements required") {
		t.Fatalf("err = %v, want both problems", err)
	}
}
