package kinds

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"scheduler"
)

// stockReport returns the report as "sku quantity scans token" lines, by SKU.
func stockReport(ctx context.Context, t *testing.T, st *testStore) string {
	t.Helper()
	var b strings.Builder
	n := st.count(ctx, t, `SELECT COUNT(*) FROM stock_report`)
	for i := 0; i < n; i++ {
		var sku string
		var qty, scans, token int64
		if err := st.query(ctx, `SELECT sku, quantity, scans, token FROM stock_report ORDER BY sku LIMIT 1 OFFSET $1`, i).
			Scan(&sku, &qty, &scans, &token); err != nil {
			t.Fatalf("read report row %d: %v", i, err)
		}
		fmt.Fprintf(&b, "%s %d %d %d\n", sku, qty, scans, token)
	}
	return b.String()
}

func addScans(ctx context.Context, t *testing.T, st *testStore, scans ...any) {
	t.Helper()
	for i := 0; i < len(scans); i += 2 {
		if err := st.exec(ctx, `INSERT INTO stock_scans (sku, quantity) VALUES ($1, $2)`, scans[i], scans[i+1]); err != nil {
			t.Fatalf("add scan: %v", err)
		}
	}
}

func mustStock(now time.Time) *StockJob {
	return NewStock(func() time.Time { return now })
}

func TestStockJob(t *testing.T) {
	builtAt := time.Date(2024, 6, 1, 4, 0, 0, 123_000_000, time.UTC)
	forEachStore(t, func(t *testing.T, st *testStore) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		addScans(ctx, t, st, "apple", 1, "apple", 2, "pear", 10, "apple", 3)
		if err := st.exec(ctx, `INSERT INTO stock_report (sku, quantity, scans, token) VALUES ('gone', 1, 1, 1)`); err != nil {
			t.Fatal(err)
		}
		j := mustStock(builtAt)
		run := scheduler.Attempt{Job: "stock", Slot: builtAt, Token: 5, Attempt: 1, RunID: "s1"}

		t.Run("Rebuilds", func(t *testing.T) {
			st.execute(ctx, t, j, run, "stock report rebuilt: 2 skus (replacing 1)")
			if got, want := stockReport(ctx, t, st), "apple 6 3 5\npear 10 1 5\n"; got != want {
				t.Fatalf("report:\n%s\nwant:\n%s", got, want)
			}
			// built_at is the injected clock, in the column's native form on each store.
			var n int
			q := `SELECT COUNT(*) FROM stock_report WHERE built_at = $1`
			var arg any = builtAt
			if st.name == "sqlite" {
				arg = "2024-06-01T04:00:00.123Z" // the text form of the SQLite tables
			}
			if err := st.query(ctx, q, arg).Scan(&n); err != nil || n != 2 {
				t.Fatalf("rows built at %v: %d, %v; want 2", builtAt, n, err)
			}
		})

		previous := stockReport(ctx, t, st)
		addScans(ctx, t, st, "plum", 4, "pear", 1)

		t.Run("FailureMidTransactionKeepsPreviousReport", func(t *testing.T) {
			seenInside := -1
			st.f.wrap = func(tx scheduler.Tx) scheduler.Tx {
				return &failingTx{Tx: tx, pass: 1, before: func(tx scheduler.Tx) {
					// The DELETE has run in this transaction: the report is empty inside it.
					if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM stock_report`).Scan(&seenInside); err != nil {
						t.Errorf("count inside the transaction: %v", err)
					}
				}}
			}
			defer func() { st.f.wrap = nil }()
			_, err := j.Execute(ctx, st.bound(scheduler.Attempt{Job: "stock", Slot: builtAt, Token: 5, Attempt: 2, RunID: "s2"}))
			if !errors.Is(err, errInjected) {
				t.Fatalf("err = %v, want the injected failure", err)
			}
			if seenInside != 0 {
				t.Fatalf("report inside the failed transaction had %d rows, want 0 (cleared)", seenInside)
			}
			if got := stockReport(ctx, t, st); got != previous {
				t.Fatalf("report after a failed rebuild:\n%s\nwant the previous one:\n%s", got, previous)
			}
		})

		t.Run("FencedOutKeepsPreviousReport", func(t *testing.T) {
			st.raiseFence(ctx, t, "stock", 6)
			_, err := j.Execute(ctx, st.bound(scheduler.Attempt{Job: "stock", Slot: builtAt, Token: 5, Attempt: 3, RunID: "s3"}))
			if !errors.Is(err, scheduler.ErrFenced) {
				t.Fatalf("err = %v, want ErrFenced", err)
			}
			if got := stockReport(ctx, t, st); got != previous {
				t.Fatalf("report after a fenced-out rebuild:\n%s\nwant the previous one:\n%s", got, previous)
			}
		})

		t.Run("NewerLeaderRebuilds", func(t *testing.T) {
			out, err := j.Execute(ctx, st.bound(scheduler.Attempt{Job: "stock", Slot: builtAt, Token: 6, Attempt: 1, RunID: "s4"}))
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if out != "stock report rebuilt: 3 skus (replacing 2)" {
				t.Fatalf("output = %q", out)
			}
			if got, want := stockReport(ctx, t, st), "apple 6 3 6\npear 11 2 6\nplum 4 1 6\n"; got != want {
				t.Fatalf("report:\n%s\nwant:\n%s", got, want)
			}
		})
	})
}
