package testenv

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Connect opens a connection of its own to dsn, as a session outside the scheduler (an operator,
// a job's role, another client) would, and closes it when the test ends; a test that needs the
// session gone earlier (to let go of its locks) closes it itself.
func Connect(ctx context.Context, tb testing.TB, dsn string) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("testenv: connect: %v", err) // not the DSN: it may hold a password
	}
	tb.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}
