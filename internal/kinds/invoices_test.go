package kinds

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"scheduler"
)

// invoiceRows returns client_id, month, amount and token of every invoice, by client and month.
func invoiceRows(ctx context.Context, t *testing.T, st *testStore) []invoiceRow {
	t.Helper()
	var rows []invoiceRow
	n := st.count(ctx, t, `SELECT COUNT(*) FROM invoices`)
	for i := 0; i < n; i++ {
		var r invoiceRow
		if err := st.query(ctx, `SELECT client_id, month, amount, token FROM invoices
			ORDER BY client_id, month LIMIT 1 OFFSET $1`, i).Scan(&r.client, &r.month, &r.amount, &r.token); err != nil {
			t.Fatalf("read invoice %d: %v", i, err)
		}
		rows = append(rows, r)
	}
	return rows
}

type invoiceRow struct {
	client int
	month  string
	amount float64
	token  int64
}

func mustInvoices(t *testing.T, p InvoicesParams) *InvoicesJob {
	t.Helper()
	j, err := NewInvoices(p)
	if err != nil {
		t.Fatalf("NewInvoices: %v", err)
	}
	return j
}

func TestInvoicesJob(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// 00:30 on 1 April in Berlin is still 31 March in UTC: the slot's own zone decides the month.
	slot := time.Date(2024, 4, 1, 0, 30, 0, 0, berlin)

	forEachStore(t, func(t *testing.T, st *testStore) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		run := scheduler.Attempt{Job: "invoices", Slot: slot, Token: 7, Attempt: 1, RunID: "invoices@" + slot.UTC().Format(time.RFC3339)}
		j := mustInvoices(t, InvoicesParams{Clients: 5, Period: "month"})

		t.Run("BillsEachClientOnce", func(t *testing.T) {
			st.execute(ctx, t, j, run, "billed 5 of 5 clients (0 already billed)")
			rows := invoiceRows(ctx, t, st)
			if len(rows) != 5 {
				t.Fatalf("%d invoices, want 5: %v", len(rows), rows)
			}
			for i, r := range rows {
				if want := (invoiceRow{i + 1, "2024-04", float64(101 + i), 7}); r != want {
					t.Fatalf("invoice %d = %+v, want %+v", i, r, want)
				}
			}
			if st.f.Calls() != 5 {
				t.Fatalf("%d fenced transactions, want one per client", st.f.Calls())
			}
		})

		t.Run("RedoAddsNothing", func(t *testing.T) {
			before := invoiceRows(ctx, t, st)
			// A retry of the slot, then a newer leader redoing it: neither adds nor changes a row.
			for _, r := range []scheduler.Attempt{{Job: run.Job, Slot: slot, Token: 7, Attempt: 2, RunID: run.RunID}, {Job: run.Job, Slot: slot, Token: 8, Attempt: 1, RunID: run.RunID}} {
				st.execute(ctx, t, j, r, "billed 5 of 5 clients (5 already billed)")
			}
			after := invoiceRows(ctx, t, st)
			if len(after) != len(before) {
				t.Fatalf("redo changed the invoices:\n%v\n%v", before, after)
			}
			for i := range after {
				if after[i] != before[i] {
					t.Fatalf("redo changed invoice %d: %+v -> %+v", i, before[i], after[i])
				}
			}
		})

		t.Run("PeriodSlot", func(t *testing.T) {
			js := mustInvoices(t, InvoicesParams{Clients: 2, Period: "slot"})
			r := run
			r.Token = 8
			if _, err := js.Execute(ctx, st.bound(r)); err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if n := st.count(ctx, t, `SELECT COUNT(*) FROM invoices WHERE month = $1`, "2024-03-31T22:30:00Z"); n != 2 {
				t.Fatalf("%d invoices for the slot's UTC time, want 2", n)
			}
		})
	})
}

func TestInvoicesJob_FencedOut(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *testStore) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		// A newer leader takes over once the third client is billed.
		st.f.afterCommit = func(n int) {
			if n == 3 {
				st.raiseFence(ctx, t, "invoices", 8)
			}
		}
		j := mustInvoices(t, InvoicesParams{Clients: 10, Period: "month"})
		out, err := j.Execute(ctx, st.bound(scheduler.Attempt{Job: "invoices", Slot: time.Date(2024, 5, 1, 2, 0, 0, 0, time.UTC), Token: 7, Attempt: 1, RunID: "r"}))
		if !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("err = %v, want ErrFenced", err)
		}
		if !strings.Contains(err.Error(), "bill client 4 ") {
			t.Fatalf("err = %v, want it to name client 4", err)
		}
		if out != "billed 3 of 10 clients (0 already billed)" {
			t.Fatalf("output = %q", out)
		}
		if st.f.Calls() != 4 {
			t.Fatalf("%d fenced transactions, want 4: the run must stop at the first rejection", st.f.Calls())
		}
		if n := st.count(ctx, t, `SELECT COUNT(*) FROM invoices`); n != 3 {
			t.Fatalf("%d invoices, want the 3 billed before the takeover", n)
		}
	})
}

func TestInvoicesJob_CancelDuringDelay(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *testStore) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		runCtx, stop := context.WithCancel(ctx)
		defer stop()
		st.f.afterCommit = func(n int) { stop() }
		// An hour between clients: the run can end in time only by leaving the delay on cancellation.
		j := mustInvoices(t, InvoicesParams{Clients: 3, Delay: time.Hour, Period: "month"})
		out, err := j.Execute(runCtx, st.bound(scheduler.Attempt{Job: "invoices", Slot: time.Date(2024, 5, 1, 2, 0, 0, 0, time.UTC), Token: 7, Attempt: 1, RunID: "r"}))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if out != "billed 1 of 3 clients (0 already billed)" {
			t.Fatalf("output = %q", out)
		}
		if n := st.count(ctx, t, `SELECT COUNT(*) FROM invoices`); n != 1 {
			t.Fatalf("%d invoices, want 1", n)
		}
	})
}

func TestNewInvoices_Invalid(t *testing.T) {
	_, err := NewInvoices(InvoicesParams{Clients: 0, Delay: -1, Period: "week"})
	for _, want := range []string{"clients:", "delay:", "period:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to mention %q", err, want)
		}
	}
}

// TestInvoicesJob_NoStore: an attempt that is not bound to a store writes nothing and says so.
func TestInvoicesJob_NoStore(t *testing.T) {
	j := mustInvoices(t, InvoicesParams{Clients: 2, Period: "month"})
	out, err := j.Execute(context.Background(), scheduler.Attempt{Job: "invoices", Slot: time.Date(2024, 5, 1, 2, 0, 0, 0, time.UTC), Token: 7, Attempt: 1, RunID: "r"})
	if !errors.Is(err, scheduler.ErrNoFencer) || errors.Is(err, scheduler.ErrFenced) {
		t.Fatalf("err = %v, want ErrNoFencer (and not ErrFenced)", err)
	}
	if out != "billed 0 of 2 clients (0 already billed)" {
		t.Fatalf("output = %q", out)
	}
}
