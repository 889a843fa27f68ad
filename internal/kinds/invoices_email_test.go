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

// outboxRows returns the messages queued, oldest first.
func outboxRows(ctx context.Context, t *testing.T, st *testStore) []scheduler.Message {
	t.Helper()
	msgs, err := st.store.Outbox(ctx, "", 1000)
	if err != nil {
		t.Fatalf("list outbox: %v", err)
	}
	return msgs
}

// TestInvoicesJob_EmailTo: each new invoice queues its one e-mail in its own transaction; a
// redo, a newer leader's included, queues nothing more; a run fenced out queues nothing.
func TestInvoicesJob_EmailTo(t *testing.T) {
	slot := time.Date(2024, 6, 1, 2, 0, 0, 0, time.UTC)
	forEachStore(t, func(t *testing.T, st *testStore) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		j := mustInvoices(t, InvoicesParams{Clients: 4, Period: "month", EmailTo: "client-{client}@example.test"})
		run := scheduler.Attempt{Job: "invoices", Slot: slot, Token: 7, Attempt: 1, RunID: "r"}

		st.execute(ctx, t, j, run, "billed 4 of 4 clients (0 already billed), 4 e-mails queued")
		msgs := outboxRows(ctx, t, st)
		if len(msgs) != 4 {
			t.Fatalf("%d messages, want one per invoice: %+v", len(msgs), msgs)
		}
		for i, m := range msgs {
			want := fmt.Sprintf("client-%d@example.test", i+1)
			if m.Destination != want || m.Kind != scheduler.MessageEmail || m.Job != "invoices" || m.Token != 7 ||
				!m.ScheduledAt.Equal(slot) || m.Status != scheduler.MessagePending || !strings.Contains(m.Body, "Amount due: 10") {
				t.Fatalf("message %d = %+v, want an e-mail to %s of the slot with token 7", i, m, want)
			}
		}

		// A retry and a newer leader's redo: the invoices exist, so no e-mail is queued again.
		for _, r := range []scheduler.Attempt{{Job: run.Job, Slot: slot, Token: 7, Attempt: 2, RunID: "r"}, {Job: run.Job, Slot: slot, Token: 8, Attempt: 1, RunID: "r"}} {
			st.execute(ctx, t, j, r, "billed 4 of 4 clients (4 already billed), 0 e-mails queued")
		}
		if n := len(outboxRows(ctx, t, st)); n != 4 {
			t.Fatalf("%d messages after the redo, want 4", n)
		}

		// An older leader billing another month after the fence rose queues nothing.
		st.raiseFence(ctx, t, "invoices", 9)
		old := scheduler.Attempt{Job: "invoices", Slot: slot.AddDate(0, 1, 0), Token: 8, Attempt: 1, RunID: "s"}
		if _, err := j.Execute(ctx, st.bound(old)); !errors.Is(err, scheduler.ErrFenced) {
			t.Fatalf("err = %v, want ErrFenced", err)
		}
		if n := len(outboxRows(ctx, t, st)); n != 4 {
			t.Fatalf("%d messages after a fenced-out run, want 4", n)
		}
	})
}

// failingEnqueue queues each message in the store and then fails, as a failure after the
// message's insert inside the transaction would.
type failingEnqueue struct{ *testFencer }

func (f failingEnqueue) Enqueue(ctx context.Context, tx scheduler.Tx, m scheduler.Message) (bool, error) {
	if _, err := f.testFencer.Enqueue(ctx, tx, m); err != nil {
		return false, err
	}
	return false, errInjected
}

// TestInvoicesJob_EmailFailureRollsBackInvoice: an e-mail that cannot be queued takes its
// invoice with it; the run stops there, and a redo bills the client with its e-mail.
func TestInvoicesJob_EmailFailureRollsBackInvoice(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *testStore) {
		ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
		defer cancel()
		j := mustInvoices(t, InvoicesParams{Clients: 3, Period: "month", EmailTo: "client-{client}@example.test"})
		run := scheduler.Attempt{Job: "invoices", Slot: time.Date(2024, 7, 1, 2, 0, 0, 0, time.UTC), Token: 7, Attempt: 1, RunID: "r"}
		bad := run
		bad.Fencer = failingEnqueue{st.f}
		out, err := j.Execute(ctx, bad)
		if !errors.Is(err, errInjected) {
			t.Fatalf("err = %v, want the injected failure", err)
		}
		if out != "billed 0 of 3 clients (0 already billed), 0 e-mails queued" {
			t.Fatalf("output = %q", out)
		}
		if n := st.count(ctx, t, `SELECT COUNT(*) FROM invoices`); n != 0 {
			t.Fatalf("%d invoices, want none: the invoice commits with its e-mail or not at all", n)
		}
		if n := len(outboxRows(ctx, t, st)); n != 0 {
			t.Fatalf("%d messages, want none", n)
		}
		if out, err := j.Execute(ctx, st.bound(run)); err != nil || out != "billed 3 of 3 clients (0 already billed), 3 e-mails queued" {
			t.Fatalf("redo: %q, %v", out, err)
		}
	})
}

func TestParseInvoicesParams_EmailTo(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string // "" for valid
	}{
		{"client-{client}@example.test", ""},
		{"billing@example.test", ""},
		{"", ""},
		{"client-{client}", "must be one e-mail address"},
		{"a@example.test, b@example.test", "must be one e-mail address"},
		{"Client <c-{client}@example.test>", "must be one e-mail address"},
		{42, "must be a string"},
	} {
		p, errs := ParseInvoicesParams(map[string]any{"email_to": tc.v})
		switch {
		case tc.want == "" && len(errs) != 0:
			t.Errorf("email_to %v: %v, want no problem", tc.v, errs)
		case tc.want == "" && p.EmailTo != tc.v:
			t.Errorf("email_to %v: EmailTo = %q", tc.v, p.EmailTo)
		case tc.want != "" && (len(errs) != 1 || errs[0].Param != "email_to" || !strings.Contains(errs[0].Msg, tc.want)):
			t.Errorf("email_to %v: %v, want %q", tc.v, errs, tc.want)
		}
	}
	if _, err := NewInvoices(InvoicesParams{Clients: 1, Period: "month", EmailTo: "nobody"}); err == nil || !strings.Contains(err.Error(), "email_to:") {
		t.Errorf("NewInvoices: err = %v, want it to name email_to", err)
	}
}
