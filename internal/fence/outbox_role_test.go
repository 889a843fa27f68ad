package fence

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"scheduler/internal/testenv"
)

// outboxRoleRecipe is jobRoleRecipe with the outbox function.
var outboxRoleRecipe = append(append([]string{}, jobRoleRecipe...),
	`GRANT EXECUTE ON FUNCTION scheduler.outbox_enqueue(text, bigint, text, text, text, text, text, timestamptz, boolean) TO {role}`)

// enqueueSQL is how a job's script queues a message after its fence check.
const enqueueSQL = `SELECT scheduler.outbox_enqueue('invoices', $1, $2, 'email', 'client-1@example.test',
	'Invoice', 'Amount due: 10', '2026-03-01T02:00:00Z', false)`

// outboxJobRole opens a Postgres store with the invoices fence at token 10 and connects to it
// as role, a job role set up by outboxRoleRecipe.
func outboxJobRole(t *testing.T, role string) (*Store, context.Context, *pgx.Conn) {
	t.Helper()
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	if err := s.RaiseAll(ctx, []string{"invoices"}, 10); err != nil {
		t.Fatal(err)
	}
	return s, ctx, connectAs(t, ctx, testenv.MustRole(t, dsn, role, outboxRoleRecipe...))
}

// testReservedKeys checks that role cannot queue any of reserved, the keys of messages the
// scheduler queues itself (what names them in a failure), and can queue own alone.
func testReservedKeys(t *testing.T, role, what string, reserved []string, own string) {
	s, ctx, conn := outboxJobRole(t, role)
	for _, key := range reserved {
		if _, err := conn.Exec(ctx, enqueueSQL, int64(10), key); sqlState(err) != "42501" {
			t.Errorf("enqueue with %s key %q: err %v, want insufficient_privilege (42501)", what, key, err)
		}
	}
	var queued bool
	if err := conn.QueryRow(ctx, enqueueSQL, int64(10), own).Scan(&queued); err != nil || !queued {
		t.Fatalf("enqueue with the job's own key: queued %v, err %v", queued, err)
	}
	if msgs := mustOutbox(t, ctx, s, ""); len(msgs) != 1 || msgs[0].Key != own {
		t.Fatalf("outbox = %+v, want %s alone", msgs, own)
	}
}

// TestPostgres_OutboxEnqueue: a job role queues messages with outbox_enqueue after its fence
// check, once per key, is refused for a token that is not the fence, and cannot write the table.
func TestPostgres_OutboxEnqueue(t *testing.T) {
	s, ctx, conn := outboxJobRole(t, "invoices_job")

	for i, want := range []bool{true, false} {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT scheduler.fence_verify('invoices', 10)`); err != nil {
			t.Fatal(err)
		}
		var queued bool
		if err := tx.QueryRow(ctx, enqueueSQL, int64(10), "inv/1").Scan(&queued); err != nil || queued != want {
			t.Fatalf("enqueue %d: queued %v (err %v), want %v", i+1, queued, err, want)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, enqueueSQL, int64(9), "inv/stale"); sqlState(err) != StaleErrorCode {
		t.Fatalf("enqueue with a stale token: err %v, want SQLSTATE %s", err, StaleErrorCode)
	}
	// The schema checks what a job role sends: the key is a Message-ID's left side.
	for _, key := range []string{"a:b", "a..b", ".a", "a b", "a@b", "<a>"} {
		if _, err := conn.Exec(ctx, enqueueSQL, int64(10), key); sqlState(err) != "23514" {
			t.Errorf("enqueue with key %q: err %v, want check_violation (23514)", key, err)
		}
	}
	for _, sql := range []string{
		`INSERT INTO scheduler.outbox (key, job, scheduled_at, token, kind, destination, next_attempt_at, created_at, updated_at)
			VALUES ('inv/direct', 'invoices', now(), 10, 'email', 'a@b', now(), now(), now())`,
		`UPDATE scheduler.outbox SET destination = 'evil@example.test'`,
		`SELECT count(*) FROM scheduler.outbox`,
	} {
		if _, err := conn.Exec(ctx, sql); sqlState(err) != "42501" {
			t.Errorf("%s: err %v, want permission denied (42501)", sql, err)
		}
	}
	msgs := mustOutbox(t, ctx, s, "")
	if len(msgs) != 1 || msgs[0].Key != "inv/1" || msgs[0].Token != 10 || msgs[0].Destination != "client-1@example.test" {
		t.Fatalf("outbox = %+v, want inv/1 alone", msgs)
	}
}

// TestPostgres_MigrateGrantsOutboxEnqueue: a job role set up before the outbox existed, with
// EXECUTE on fence_verify, may queue messages once the store is migrated; PUBLIC may not.
func TestPostgres_MigrateGrantsOutboxEnqueue(t *testing.T) {
	dsn := testenv.MustDatabase(t)
	s := openRaw(t, Config{DSN: dsn})
	ctx := testCtx(t)
	migrateTo(t, s, 6)
	roleDSN := testenv.MustRole(t, dsn, "old_invoices", jobRoleRecipe...)
	plainDSN := testenv.MustRole(t, dsn, "plain", `GRANT USAGE ON SCHEMA scheduler TO {role}`)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.RaiseAll(ctx, []string{"invoices"}, 10); err != nil {
		t.Fatal(err)
	}
	var queued bool
	if err := connectAs(t, ctx, roleDSN).QueryRow(ctx, enqueueSQL, int64(10), "inv/1").Scan(&queued); err != nil || !queued {
		t.Fatalf("enqueue by the fence_verify grantee: queued %v, err %v", queued, err)
	}
	if _, err := connectAs(t, ctx, plainDSN).Exec(ctx, enqueueSQL, int64(10), "inv/2"); sqlState(err) != "42501" {
		t.Fatalf("enqueue by a role without grants: err %v, want permission denied (42501)", err)
	}
}

// TestPostgres_OutboxEnqueueBuiltinKeys: a job role cannot queue a key of the invoices builtin
// first, which would make the builtin's own message a redo and drop the real invoice's e-mail.
func TestPostgres_OutboxEnqueueBuiltinKeys(t *testing.T) {
	testReservedKeys(t, "invoices_job", "the builtin's",
		[]string{"invoice.invoices.1772330400000000.1", "Invoice.invoices.1.2", "INVOICE.x"}, "invoices.own.1")
}
