package kinds

import (
	"context"
	"errors"
	"strings"
	"testing"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/testenv"
)

func TestSQLJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *testStore) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		run := scheduler.Attempt{Job: "adhoc", Token: 5, Attempt: 1, RunID: "1"}
		t.Run("RunsTheTextFencedAndReportsRows", func(t *testing.T) {
			if err := st.exec(ctx, `INSERT INTO stock_scans (sku, quantity) VALUES ('old', 1)`); err != nil {
				t.Fatal(err)
			}
			j, err := NewSQL(SQLConfig{Statements: "DELETE FROM stock_scans; INSERT INTO stock_scans (sku, quantity) VALUES ('a', 1), ('b', 2)"})
			if err != nil {
				t.Fatal(err)
			}
			out, err := j.Execute(ctx, st.bound(run))
			if err != nil || out != "3 rows affected" {
				t.Fatalf("Execute = %q, %v; want 3 rows affected", out, err)
			}
			if n := st.count(ctx, t, `SELECT COUNT(*) FROM stock_scans WHERE sku IN ('a', 'b')`); n != 2 {
				t.Fatalf("%d scans written, want 2", n)
			}
			// The text ran fenced with the run's token for the run's job.
			fences, err := st.store.Fences(ctx, "adhoc")
			if err != nil || fences["adhoc"] != 5 {
				t.Fatalf("fences = %v (err %v), want adhoc at the run's token 5", fences, err)
			}
		})
		t.Run("KeepsTheFencedError", func(t *testing.T) {
			st.raiseFence(ctx, t, "adhoc", 6)
			j, err := NewSQL(SQLConfig{Statements: "INSERT INTO stock_scans (sku, quantity) VALUES ('late', 1)"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Execute(ctx, st.bound(run)); !errors.Is(err, scheduler.ErrFenced) || !strings.Contains(err.Error(), "token 5") {
				t.Fatalf("err = %v, want ErrFenced naming the token", err)
			}
			if n := st.count(ctx, t, `SELECT COUNT(*) FROM stock_scans WHERE sku = 'late'`); n != 0 {
				t.Fatalf("%d late scans, want none: a refused text commits nothing", n)
			}
		})
	})
}

// TestSQLJob_Role: the text runs under the configured role.
func TestSQLJob_Role(t *testing.T) {
	dsn := testenv.MustDatabase(t)
	st := mustStore(t, "postgres", fence.Config{DSN: dsn})
	role := testenv.RoleName(testenv.MustRole(t, dsn, "nightly", `GRANT INSERT ON public.stock_scans TO {role}`))
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	j, err := NewSQL(SQLConfig{Statements: "INSERT INTO public.stock_scans (sku, quantity) VALUES (current_user, 1)", Role: role})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := j.Execute(ctx, st.bound(scheduler.Attempt{Job: "adhoc", Token: 5, Attempt: 1, RunID: "1"})); err != nil || out != "1 rows affected" {
		t.Fatalf("Execute = %q, %v; want 1 rows affected", out, err)
	}
	var who string
	if err := st.query(ctx, `SELECT sku FROM stock_scans`).Scan(&who); err != nil || who != role {
		t.Fatalf("the text ran as %q (err %v), want %q", who, err, role)
	}
}

func TestNewSQL_Invalid(t *testing.T) {
	_, err := NewSQL(SQLConfig{Statements: "  "})
	if err == nil || !strings.Contains(err.Error(), "sql: is required") {
		t.Fatalf("err = %v, want the missing statements named", err)
	}
}

// TestSQLJob_NoStore: an attempt that is not bound to a store runs nothing and says so.
func TestSQLJob_NoStore(t *testing.T) {
	j, err := NewSQL(SQLConfig{Statements: "SELECT 1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Execute(context.Background(), scheduler.Attempt{Job: "adhoc", Token: 5}); !errors.Is(err, scheduler.ErrNoFencer) {
		t.Fatalf("err = %v, want ErrNoFencer", err)
	}
}
