package fence

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"scheduler"

	"scheduler/internal/testenv"
)

// outboxRoleRecipe is jobRoleRecipe with the outbox function.
var outboxRoleRecipe = append(append([]string{}, jobRoleRecipe...),
	`GRANT EXECUTE ON FUNCTION scheduler.outbox_enqueue(text, bigint, text, text, text, text, text, timestamptz, boolean) TO {role}`)

// enqueueSQL is how a job's script queues a message after its fence check.
const enqueueSQL = `SELECT scheduler.outbox_enqueue('invoices', $1, $2, 'email', 'client-1@example.test',
	'Invoice', 'Amount due: 10', '2026-03-01T02:00:00Z', false)`

// outboxSlot is the slot of the invoices run whose messages the tests' job role queues.
var outboxSlot = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)

// outboxJobRole opens a Postgres store with the invoices fence at token 10 and its run of
// outboxSlot claimed, and connects to it as role, a job role set up by outboxRoleRecipe, with
// the run's secret set for the session, as a script of that run sets it for its transaction.
func outboxJobRole(t *testing.T, role string) (*Store, context.Context, *pgx.Conn) {
	t.Helper()
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	if err := s.RaiseAll(ctx, []string{"invoices"}, 10); err != nil {
		t.Fatal(err)
	}
	conn := connectAs(t, ctx, testenv.MustRole(t, dsn, role, outboxRoleRecipe...))
	withRunSecret(t, ctx, conn, false, mustRunSecret(t, ctx, s, 10, "invoices", outboxSlot))
	return s, ctx, conn
}

// mustRunSecret claims job's run of slot at with token and returns the run's secret.
func mustRunSecret(t *testing.T, ctx context.Context, s *Store, token int64, job string, at time.Time) string {
	t.Helper()
	res, err := s.ClaimMany(ctx, token, "n1", []scheduler.SlotKey{{Job: job, At: at}})
	if err != nil || len(res) != 1 {
		t.Fatalf("claim %s at %s: %v (err %v)", job, at, res, err)
	}
	secret, err := s.RunSecret(ctx, strconv.FormatInt(res[0].Run.RunID, 10))
	if want := strconv.FormatInt(res[0].Run.RunID, 10) + "."; err != nil || len(secret) != len(want)+64 || secret[:len(want)] != want {
		t.Fatalf("secret of run %d: %q (err %v), want its id, a dot and 64 hex digits", res[0].Run.RunID, secret, err)
	}
	return secret
}

// withRunSecret sets scheduler.run_secret on conn: for its transaction when local, else for
// the session.
func withRunSecret(t *testing.T, ctx context.Context, conn interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, local bool, secret string) {
	t.Helper()
	if _, err := conn.Exec(ctx, `SELECT set_config('scheduler.run_secret', $1, $2)`, secret, local); err != nil {
		t.Fatal(err)
	}
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
		if err := tx.QueryRow(ctx, enqueueSQL, int64(10), "invoices.1").Scan(&queued); err != nil || queued != want {
			t.Fatalf("enqueue %d: queued %v (err %v), want %v", i+1, queued, err, want)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, enqueueSQL, int64(9), "invoices.stale"); sqlState(err) != StaleErrorCode {
		t.Fatalf("enqueue with a stale token: err %v, want SQLSTATE %s", err, StaleErrorCode)
	}
	// The schema checks what a job role sends: the key is a Message-ID's left side.
	for _, key := range []string{"invoices.a:b", "invoices.a..b", "invoices..a", "invoices.a b", "invoices.a@b", "invoices.<a>"} {
		if _, err := conn.Exec(ctx, enqueueSQL, int64(10), key); sqlState(err) != "23514" {
			t.Errorf("enqueue with key %q: err %v, want check_violation (23514)", key, err)
		}
	}
	for _, sql := range []string{
		`INSERT INTO scheduler.outbox (key, job, scheduled_at, token, kind, destination, next_attempt_at, created_at, updated_at)
			VALUES ('invoices.direct', 'invoices', now(), 10, 'email', 'a@b', now(), now(), now())`,
		`UPDATE scheduler.outbox SET destination = 'evil@example.test'`,
		`SELECT count(*) FROM scheduler.outbox`,
	} {
		if _, err := conn.Exec(ctx, sql); sqlState(err) != "42501" {
			t.Errorf("%s: err %v, want permission denied (42501)", sql, err)
		}
	}
	msgs := mustOutbox(t, ctx, s, "")
	if len(msgs) != 1 || msgs[0].Key != "invoices.1" || msgs[0].Token != 10 || msgs[0].Destination != "client-1@example.test" {
		t.Fatalf("outbox = %+v, want invoices.1 alone", msgs)
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
	conn := connectAs(t, ctx, roleDSN)
	withRunSecret(t, ctx, conn, false, mustRunSecret(t, ctx, s, 10, "invoices", outboxSlot))
	var queued bool
	if err := conn.QueryRow(ctx, enqueueSQL, int64(10), "invoices.1").Scan(&queued); err != nil || !queued {
		t.Fatalf("enqueue by the fence_verify grantee: queued %v, err %v", queued, err)
	}
	if _, err := connectAs(t, ctx, plainDSN).Exec(ctx, enqueueSQL, int64(10), "invoices.2"); sqlState(err) != "42501" {
		t.Fatalf("enqueue by a role without grants: err %v, want permission denied (42501)", err)
	}
}

// TestPostgres_OutboxEnqueueBuiltinKeys: a job role cannot queue a key of the invoices builtin
// first, which would make the builtin's own message a redo and drop the real invoice's e-mail.
func TestPostgres_OutboxEnqueueBuiltinKeys(t *testing.T) {
	testReservedKeys(t, "invoices_job", "the builtin's",
		[]string{"invoice.invoices.1772330400000000.1", "Invoice.invoices.1.2", "INVOICE.x"}, "invoices.own.1")
}
