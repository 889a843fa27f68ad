package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestSQLJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *testStore) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		const statements = `
			INSERT INTO invoices (client_id, month, amount, token) VALUES (1, 'm', 1, 5), (2, 'm', 2, 5);
			UPDATE invoices SET amount = amount + 10 WHERE month = 'm';`
		j, err := NewSQL(st.f, statements)
		if err != nil {
			t.Fatal(err)
		}
		run := Run{Job: "adhoc", Token: 5, Attempt: 1, RunID: "r"}

		t.Run("RunsAllStatementsInOneTransaction", func(t *testing.T) {
			out, err := j.Execute(ctx, run)
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if out != "2 rows affected" {
				t.Fatalf("output = %q, want the last statement's 2 rows", out)
			}
			if n := st.count(ctx, t, `SELECT COUNT(*) FROM invoices WHERE month = 'm' AND amount > 10`); n != 2 {
				t.Fatalf("%d invoices written and updated, want 2", n)
			}
		})

		t.Run("FailureRollsBackEveryStatement", func(t *testing.T) {
			bad, err := NewSQL(st.f, `INSERT INTO invoices (client_id, month, amount, token) VALUES (3, 'm', 3, 5);
				INSERT INTO invoices (client_id, month, amount, token) VALUES (1, 'm', 1, 5);`) // duplicate key
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bad.Execute(ctx, run); err == nil {
				t.Fatal("Execute succeeded despite a duplicate key")
			}
			if n := st.count(ctx, t, `SELECT COUNT(*) FROM invoices WHERE client_id = 3`); n != 0 {
				t.Fatalf("the first statement of a failed run was kept")
			}
		})

		t.Run("FencedOut", func(t *testing.T) {
			st.raiseFence(ctx, t, "adhoc", 6)
			before := st.count(ctx, t, `SELECT COUNT(*) FROM invoices`)
			w, err := NewSQL(st.f, `INSERT INTO invoices (client_id, month, amount, token) VALUES (9, 'late', 1, 5)`)
			if err != nil {
				t.Fatal(err)
			}
			_, err = w.Execute(ctx, run)
			if !errors.Is(err, ErrFenced) {
				t.Fatalf("err = %v, want ErrFenced", err)
			}
			if after := st.count(ctx, t, `SELECT COUNT(*) FROM invoices`); after != before {
				t.Fatalf("a fenced-out run wrote %d rows", after-before)
			}
		})
	})
}

func TestNewSQL_Invalid(t *testing.T) {
	_, err := NewSQL(nil, "  ")
	if err == nil || !strings.Contains(err.Error(), "fencer: required") || !strings.Contains(err.Error(), "statements required") {
		t.Fatalf("err = %v, want both problems", err)
	}
}
