package fence

import (
	"context"
	"errors"
	"strings"
	"testing"

	"scheduler"
)

// invoiceCount counts the invoices rows, on either store, in a transaction fenced with token.
func invoiceCount(t *testing.T, ctx context.Context, s *Store, token int64) int {
	t.Helper()
	var n int
	if err := s.Fenced(ctx, "invoices", token, func(ctx context.Context, tx scheduler.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM invoices`).Scan(&n)
	}); err != nil {
		t.Fatalf("count invoices: %v", err)
	}
	return n
}

// badTexts are texts a job could hand the outbox that neither store can keep as they are.
var badTexts = []struct{ name, v string }{
	{"NUL", "Amount due: 10\x00Bcc: evil@example.test"},
	{"InvalidUTF8", "Amount due: \xff\xfe10"},
	{"NULHidingAnOversizedBody", "\x00" + strings.Repeat("x", 1<<20+1)},
}

// TestStore_EnqueueRefusesBadText: a message whose destination, subject or body holds a NUL
// byte or invalid UTF-8, queued by a builtin through its fenced transaction, is refused with
// ErrInvalidMessage on both stores alike, and the transaction's invoice does not commit
// without its e-mail.
func TestStore_EnqueueRefusesBadText(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, ctx context.Context, s *Store) {
		if err := s.RaiseAll(ctx, []string{"invoices"}, 10); err != nil {
			t.Fatal(err)
		}
		for _, field := range []string{"destination", "subject", "body"} {
			for i, bad := range badTexts {
				t.Run(field+"/"+bad.name, func(t *testing.T) {
					m := mail("invoice.bad."+field+"."+bad.name, 10)
					switch field {
					case "destination":
						m.Destination = "client-1@example.test" + bad.v
					case "subject":
						m.Subject = bad.v
					default:
						m.Body = bad.v
					}
					err := s.Fenced(ctx, "invoices", 10, func(ctx context.Context, tx scheduler.Tx) error {
						if _, err := tx.Exec(ctx, `INSERT INTO invoices (client_id, month, amount, token) VALUES ($1, '2026-03', 10, 10)`, 100+i); err != nil {
							return err
						}
						_, err := s.Enqueue(ctx, tx, m)
						return err
					})
					if !errors.Is(err, ErrInvalidMessage) || !strings.Contains(err.Error(), field) {
						t.Fatalf("enqueue with a bad %s: err %v, want ErrInvalidMessage naming the %s", field, err, field)
					}
				})
			}
		}
		if msgs := mustOutbox(t, ctx, s, ""); len(msgs) != 0 {
			t.Fatalf("outbox holds %d messages, want 0", len(msgs))
		}
		if n := invoiceCount(t, ctx, s, 10); n != 0 {
			t.Fatalf("%d invoices committed without their e-mail, want 0", n)
		}
		// Text that is merely unusual is kept as it is.
		m := mail("invoice.ok", 10)
		m.Subject, m.Body = "Rechnung März – ü", "Betrag: 10 €\n\tDanke"
		if n, err := enqueueAll(ctx, s, 10, m); err != nil || n != 1 {
			t.Fatalf("enqueue of valid UTF-8: queued %d, err %v", n, err)
		}
		if got := mustOutbox(t, ctx, s, ""); len(got) != 1 || got[0].Subject != m.Subject || got[0].Body != m.Body {
			t.Fatalf("outbox = %+v, want the message as queued", got)
		}
	})
}

// TestPostgres_OutboxEnqueueRefusesBadText: a job role passing a NUL byte or invalid UTF-8 to
// outbox_enqueue is refused by the server (character_not_in_repertoire) and its transaction,
// the invoice it wrote included, commits nothing.
func TestPostgres_OutboxEnqueueRefusesBadText(t *testing.T) {
	s, ctx, conn := outboxJobRole(t, "invoices_job")
	const enqueue = `SELECT scheduler.outbox_enqueue('invoices', 10, $1, 'email', $2, $3, $4, '2026-03-01T02:00:00Z', false)`
	for _, field := range []string{"destination", "subject", "body"} {
		for _, bad := range badTexts[:2] {
			t.Run(field+"/"+bad.name, func(t *testing.T) {
				args := []any{"invoices.role." + field + "." + bad.name, "client-1@example.test", "Invoice", "Amount due: 10"}
				switch field {
				case "destination":
					args[1] = args[1].(string) + bad.v
				case "subject":
					args[2] = bad.v
				default:
					args[3] = bad.v
				}
				tx, err := conn.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = tx.Rollback(ctx) }()
				for _, sql := range []string{`SELECT scheduler.fence_verify('invoices', 10)`,
					`INSERT INTO public.invoices (client_id, month, amount, token) VALUES (1, '2026-03', 10, 10)`} {
					if _, err := tx.Exec(ctx, sql); err != nil {
						t.Fatal(err)
					}
				}
				_, err = tx.Exec(ctx, enqueue, args...)
				if sqlState(err) != "22021" {
					t.Fatalf("enqueue with a bad %s: err %v, want character_not_in_repertoire (22021)", field, err)
				}
				if err := tx.Commit(ctx); err == nil {
					t.Fatal("the role's transaction committed after the refusal")
				}
			})
		}
	}
	if msgs := mustOutbox(t, ctx, s, ""); len(msgs) != 0 {
		t.Fatalf("outbox holds %d messages, want 0", len(msgs))
	}
	if n := countInvoices(t, ctx, s); n != 0 {
		t.Fatalf("%d invoices, want 0", n)
	}
}
