package fence

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"scheduler"
	"scheduler/internal/testenv"
)

// alterDatabase sets a default of the database dsn names, for the sessions that connect after.
func alterDatabase(t *testing.T, ctx context.Context, dsn, set string) {
	t.Helper()
	conn := connectAs(t, ctx, dsn)
	if _, err := conn.Exec(ctx, `SET default_transaction_read_only = off`); err != nil {
		t.Fatal(err)
	}
	var name string
	if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s %s", pgx.Identifier{name}.Sanitize(), set)); err != nil {
		t.Fatal(err)
	}
}

// holdExclusive takes job's fence lock exclusively in a transaction of another session, as
// anyone may (the advisory lock functions are PUBLIC), and leaves it open; release ends it.
func holdExclusive(t *testing.T, ctx context.Context, dsn, job string) (release func()) {
	t.Helper()
	conn := connectAs(t, ctx, dsn)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('scheduler.job_fence:' || $1, 0))`, job); err != nil {
		t.Fatal(err)
	}
	return func() { _ = tx.Rollback(context.Background()) }
}

// TestPostgres_StatementTimeoutBelowLockWaits: the database sets a statement_timeout (300 ms)
// shorter than the store's waits for a fence's lock (the raise's 1 s, a write's 1 s), and a
// session holds one job's fence. The raise and the write end as held (ErrRaiseTimeout,
// ErrFenceHeld naming the job), which the runner settles by holding that job back alone; once
// the hold ends both succeed. Before, the statement_timeout cancelled them first, and a raise
// so cancelled at a takeover ended the term, term after term, for as long as the hold lasted.
func TestPostgres_StatementTimeoutBelowLockWaits(t *testing.T) {
	ctx := testCtx(t)
	dsn := testenv.MustDatabase(t)
	alterDatabase(t, ctx, dsn, "SET statement_timeout = '300ms'")
	s := mustOpen(t, Config{DSN: dsn, RaiseTimeout: time.Second})
	if err := s.RaiseAll(ctx, []string{"a", "b"}, 10); err != nil {
		t.Fatal(err)
	}
	release := holdExclusive(t, ctx, dsn, "a")
	if err := s.RaiseAll(ctx, []string{"a", "b"}, 20); !errors.Is(err, ErrRaiseTimeout) {
		t.Fatalf("raise past a held fence: %v, want ErrRaiseTimeout", err)
	}
	slot := scheduler.SlotKey{Job: "a", At: time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)}
	var held *scheduler.HeldError
	if _, err := s.ClaimMany(ctx, 10, "n1", []scheduler.SlotKey{slot}); !errors.As(err, &held) || held.Job != "a" {
		t.Fatalf("write past a held fence: %v, want it held for job a", err)
	}
	release()
	if err := s.RaiseAll(ctx, []string{"a", "b"}, 20); err != nil {
		t.Fatalf("raise once the hold ended: %v", err)
	}
	if _, err := s.ClaimMany(ctx, 20, "n1", []scheduler.SlotKey{slot}); err != nil {
		t.Fatalf("write once the hold ended: %v", err)
	}
}

// TestPostgres_WritableAgain: the database is made read-only (default_transaction_read_only)
// and its sessions are ended, so the store's pool connects again read-only; writes fail. Once
// the database is writable again, the store writes again after at most one more refusal.
// Before, the pool's sessions kept the read-only default they connected with, and every write
// failed until they aged out (an hour), while the replica went on leading.
func TestPostgres_WritableAgain(t *testing.T) {
	ctx := testCtx(t)
	dsn := testenv.MustDatabase(t)
	s := mustOpen(t, Config{DSN: dsn})
	if err := s.RaiseAll(ctx, []string{"a"}, 10); err != nil {
		t.Fatal(err)
	}
	alterDatabase(t, ctx, dsn, "SET default_transaction_read_only = on")
	admin := connectAs(t, ctx, dsn)
	endSessions := func() {
		if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'scheduler'`); err != nil {
			t.Fatal(err)
		}
	}
	endSessions()
	at := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	claim := func(i int) error {
		_, err := s.ClaimMany(ctx, 10, "n1", []scheduler.SlotKey{{Job: "a", At: at.Add(time.Duration(i) * time.Minute)}})
		return err
	}
	// Fill the pool with read-only sessions: writes side by side.
	refused := 0
	for i := range 8 {
		if err := claim(i); err == nil {
			t.Fatalf("claim %d succeeded on a read-only database", i)
		} else if sqlState(err) == "25006" {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("no write was refused as read-only")
	}
	alterDatabase(t, ctx, dsn, "RESET default_transaction_read_only")
	failures := 0
	for i := 100; i < 110; i++ {
		if err := claim(i); err != nil {
			failures++
		}
	}
	if failures > 1 {
		t.Fatalf("%d of 10 writes failed after the database was writable again, want at most 1", failures)
	}
}

// TestStore_StoreNow: Postgres answers its clock (here the same host's, so within a second of
// this process's); SQLite, which runs in the process, keeps no time of its own.
func TestStore_StoreNow(t *testing.T) {
	ctx := testCtx(t)
	s, _ := mustPostgresStore(t, Config{})
	now, ok, err := s.StoreNow(ctx)
	if d := time.Since(now); err != nil || !ok || d < -time.Second || d > time.Second {
		t.Fatalf("Postgres StoreNow=%v, %v, %v (%s off), want the server's clock", now, ok, err, d)
	}
	lite := backends()[1].fresh(t)(Config{})
	if _, ok, err := lite.StoreNow(ctx); ok || err != nil {
		t.Fatalf("SQLite StoreNow ok=%v, %v; want no clock of its own", ok, err)
	}
}
