package fence

import (
	"context"
	"errors"
	"strings"
	"testing"

	"scheduler"
	"scheduler/internal/fence/internal/postgres"
	"scheduler/internal/fence/internal/sqlite"
	"scheduler/internal/fence/internal/verdict"
	"scheduler/internal/testenv"
)

// TestFencedStatements runs a sql job's text on both backends: every statement runs in the one
// fenced transaction, the rows written are summed, a failing statement rolls back the others,
// and a stale token writes nothing.
func TestFencedStatements(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, ctx context.Context, s *Store) {
		scans := func() int {
			var n int
			if err := s.Fenced(ctx, "reader", 1, func(_ context.Context, tx scheduler.Tx) error {
				return tx.QueryRow(ctx, `SELECT count(*) FROM stock_scans`).Scan(&n)
			}); err != nil {
				t.Fatal(err)
			}
			return n
		}
		n, err := s.FencedStatements(ctx, "job", 10, "", `
			INSERT INTO stock_scans (sku, quantity) VALUES ('a', 1), ('b', 2);
			SELECT count(*) FROM stock_scans;
			UPDATE stock_scans SET quantity = 5 WHERE sku = 'a';
			DELETE FROM stock_scans WHERE sku = 'b'`)
		if err != nil || n != 4 {
			t.Fatalf("FencedStatements = %d, %v; want 4 rows (2 inserted, 1 updated, 1 deleted)", n, err)
		}
		if got := scans(); got != 1 {
			t.Fatalf("%d scans, want 1", got)
		}
		if _, err := s.FencedStatements(ctx, "job", 10, "", `
			INSERT INTO stock_scans (sku, quantity) VALUES ('c', 1);
			INSERT INTO stock_scans (sku) VALUES ('d')`); err == nil {
			t.Fatal("a text whose second statement fails succeeded")
		}
		if got := scans(); got != 1 {
			t.Fatalf("%d scans after a failed text, want 1: its first statement was kept", got)
		}
		if err := s.RaiseAll(ctx, []string{"job"}, 20); err != nil {
			t.Fatal(err)
		}
		_, err = s.FencedStatements(ctx, "job", 10, "", `INSERT INTO stock_scans (sku, quantity) VALUES ('late', 1)`)
		var se *scheduler.FenceError
		if !errors.As(err, &se) || se.Fence != 20 || se.Token != 10 {
			t.Fatalf("stale token: err %v, want a FenceError with fence 20", err)
		}
		if got := scans(); got != 1 {
			t.Fatalf("a stale token wrote: %d scans, want 1", got)
		}
		// A text that ends the transaction itself fails the run with ErrTxEnded, on
		// either store, also when it begins another one.
		for _, text := range []string{
			`INSERT INTO stock_scans (sku, quantity) VALUES ('e', 1); COMMIT`,
			`ROLLBACK; INSERT INTO stock_scans (sku, quantity) VALUES ('f', 1)`,
			// Ended and begun again: the transaction open at the end is not the fenced one.
			`INSERT INTO stock_scans (sku, quantity) VALUES ('g', 1); COMMIT; BEGIN; INSERT INTO stock_scans (sku, quantity) VALUES ('h', 1)`,
			`ROLLBACK; BEGIN; INSERT INTO stock_scans (sku, quantity) VALUES ('i', 1)`,
		} {
			if _, err := s.FencedStatements(ctx, "job", 20, "", text); !errors.Is(err, verdict.ErrTxEnded) {
				t.Errorf("a text that ends the transaction (%s): err %v, want %v", text, err, verdict.ErrTxEnded)
			}
		}
		// e and g were committed by the texts' COMMIT, f outside any transaction after the
		// ROLLBACK; h and i, in transactions the texts began, were rolled back.
		if got := scans(); got != 4 {
			t.Errorf("%d scans after the texts that ended the transaction, want 4", got)
		}
		for _, st := range []struct{ Text, Role string }{{Text: " "}, {Text: "SELECT 1", Role: "Bad-Role"}, {Text: `SELECT 1`, Role: `x"; DROP TABLE runs; --`}} {
			if _, err := s.FencedStatements(ctx, "job", 20, st.Role, st.Text); err == nil {
				t.Errorf("FencedStatements(%+v) succeeded", st)
			}
		}
	})
}

// TestFencedStatements_SQLiteRefusesRole: SQLite has no roles; a role is an error, not ignored.
func TestFencedStatements_SQLiteRefusesRole(t *testing.T) {
	s := backends()[1].fresh(t)(Config{})
	_, err := s.FencedStatements(testCtx(t), "job", 1, "nightly", "SELECT 1")
	if !errors.Is(err, sqlite.ErrNoRoles) {
		t.Fatalf("err %v, want %v", err, sqlite.ErrNoRoles)
	}
	if _, err := Open(testCtx(t), Config{Path: t.TempDir() + "/s.db", JobDSN: "postgres://x@y/z"}, nil); err == nil {
		t.Fatal("a job DSN with a SQLite store was accepted")
	}
}

// TestPostgres_FencedStatementsOnJobDSN: on the job connection, whose role may only check, a
// job whose fence is missing or below the token is raised by the store's own role first; a
// stale token is refused with the fence; a text that ends the transaction itself fails; a role
// the connection's role was not granted fails.
func TestPostgres_FencedStatementsOnJobDSN(t *testing.T) {
	owner, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	jobDSN := testenv.MustRole(t, dsn, "scheduler_jobs",
		`ALTER ROLE {role} NOINHERIT`,
		`GRANT USAGE ON SCHEMA scheduler TO {role}`,
		`GRANT EXECUTE ON FUNCTION scheduler.fence_verify(text, bigint) TO {role}`,
		`GRANT INSERT, SELECT ON public.stock_scans TO {role}`)
	s := mustOpen(t, Config{DSN: dsn, JobDSN: jobDSN})
	ins := `INSERT INTO stock_scans (sku, quantity) VALUES ('a', 1)`

	if n, err := s.FencedStatements(ctx, "new", 10, "", ins); err != nil || n != 1 {
		t.Fatalf("job without a fence: %d, %v; want it raised and 1 row", n, err)
	}
	if f, err := owner.Fences(ctx, "new"); err != nil || f["new"] != 10 {
		t.Fatalf("fence = %v (err %v), want 10", f, err)
	}
	if n, err := s.FencedStatements(ctx, "new", 11, "", ins); err != nil || n != 1 {
		t.Fatalf("fence below the token: %d, %v; want it raised and 1 row", n, err)
	}
	_, err := s.FencedStatements(ctx, "new", 10, "", ins)
	var se *scheduler.FenceError
	if !errors.As(err, &se) || se.Fence != 11 || se.Job != "new" {
		t.Fatalf("stale token: err %v, want a FenceError with fence 11", err)
	}
	_, err = s.FencedStatements(ctx, "new", 11, "", `INSERT INTO stock_scans (sku, quantity) VALUES ('b', 1); COMMIT`)
	if !errors.Is(err, verdict.ErrTxEnded) {
		t.Fatalf("a text with COMMIT: err %v, want %v", err, verdict.ErrTxEnded)
	}
	_, err = s.FencedStatements(ctx, "new", 11, "pg_write_all_data", `SELECT 1`)
	if err == nil || !strings.Contains(err.Error(), "set role") {
		t.Fatalf("a role not granted to the job connection's: err %v, want set role refused", err)
	}
}

// TestPostgres_FencedStatementsRole: on the store's own connection a role limits the statements
// to that role's rights (SET LOCAL ROLE), but is no boundary: RESET ROLE returns to the store's
// own role, which is why the recommended setup adds Config.JobDSN.
func TestPostgres_FencedStatementsRole(t *testing.T) {
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	role := testenv.RoleName(testenv.MustRole(t, dsn, "ingest_job",
		`GRANT INSERT ON public.stock_scans TO {role}`))
	as := func(text string) error {
		_, err := s.FencedStatements(ctx, "job", 10, role, text)
		return err
	}
	if err := as(`INSERT INTO stock_scans (sku, quantity) SELECT current_user, 1`); err != nil {
		t.Fatalf("the role's own write: %v", err)
	}
	if err := as(`INSERT INTO invoices (client_id, month, amount, token) VALUES (1, 'm', 1, 10)`); sqlState(err) != "42501" {
		t.Fatalf("a write the role was not granted: err %v, want permission denied", err)
	}
	if err := as(`RESET ROLE; INSERT INTO invoices (client_id, month, amount, token) VALUES (2, 'm', 1, 10)`); err != nil {
		t.Fatalf("RESET ROLE on the store's own connection: %v (documented as no boundary)", err)
	}
	var who string
	if err := s.b.(*postgres.Backend).Pool().QueryRow(ctx, `SELECT sku FROM stock_scans`).Scan(&who); err != nil || who != role {
		t.Fatalf("the statements ran as %q (err %v), want %q", who, err, role)
	}
}
