package fence

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// bindEnqueue queues a message of job's slot outboxSlot with key, for the token of the tests.
const bindEnqueue = `SELECT scheduler.outbox_enqueue($1, 10, $2, 'email', 'client-1@example.test',
	'Invoice', 'Amount due: 10', '2026-03-01T02:00:00Z', false)`

// TestPostgres_OutboxEnqueueBindsTheRun: every fence of a term holds the same token, so a job
// role that passed fence_verify for its own job could name any other. With its own run's secret
// it still cannot queue a message as another job, nor a key of another job under its own, so
// that the other job's real message is never made a redo; without the secret, or with a forged
// one or a finished run's, it queues nothing. The other job's own call then queues its message.
func TestPostgres_OutboxEnqueueBindsTheRun(t *testing.T) {
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	if err := s.RaiseAll(ctx, []string{"nightly", "report"}, 10); err != nil {
		t.Fatal(err)
	}
	nightly := mustRunSecret(t, ctx, s, 10, "nightly", outboxSlot)
	report := mustRunSecret(t, ctx, s, 10, "report", outboxSlot)
	// A finished run's secret queues nothing any more.
	finished := mustRunSecret(t, ctx, s, 10, "report", outboxSlot.Add(time.Hour))
	finishedID, _ := strconv.ParseInt(finished[:strings.IndexByte(finished, '.')], 10, 64)
	if _, err := s.Complete(ctx, 10, scheduler.Completion{RunID: finishedID, Job: "report", Status: scheduler.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	conn := connectAs(t, ctx, testenv.MustRole(t, dsn, "report_job", outboxRoleRecipe...))
	// forged changes the secret's last hex digit, so that it never equals the real one (ending
	// it in a fixed "00" did, once in 256 runs).
	forged := func(secret string) string {
		last := "0"
		if secret[len(secret)-1] == '0' {
			last = "1"
		}
		return secret[:len(secret)-1] + last
	}

	for _, c := range []struct {
		name, secret, job, key string
	}{
		{"another job's message with its own secret", report, "nightly", "nightly.1"},
		{"another job's key under its own job", report, "report", "nightly.1"},
		{"a key of no job's shape", report, "report", "nightlyreport.1"},
		{"another job's message without a secret", "", "nightly", "nightly.1"},
		{"its own message without a secret", "", "report", "report.1"},
		{"its own message with the secret of its finished run", finished, "report", "report.1"},
		{"its own message with a forged secret", forged(report), "report", "report.1"},
		{"its own message with another run's secret", "1" + report, "report", "report.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if _, err := tx.Exec(ctx, `SELECT scheduler.fence_verify('report', 10)`); err != nil {
				t.Fatal(err)
			}
			withRunSecret(t, ctx, tx, true, c.secret)
			if _, err := tx.Exec(ctx, bindEnqueue, c.job, c.key); sqlState(err) != "42501" {
				t.Fatalf("enqueue %s as %s: err %v, want insufficient_privilege (42501)", c.key, c.job, err)
			}
		})
	}
	if msgs := mustOutbox(t, ctx, s, ""); len(msgs) != 0 {
		t.Fatalf("outbox after the refusals = %+v, want nothing", msgs)
	}

	// Each job's own run queues its own message.
	for _, own := range []struct{ job, secret string }{{"nightly", nightly}, {"report", report}} {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		withRunSecret(t, ctx, tx, true, own.secret)
		var queued bool
		if err := tx.QueryRow(ctx, bindEnqueue, own.job, own.job+".1").Scan(&queued); err != nil || !queued {
			t.Fatalf("enqueue %s.1 with its run's secret: queued %v, err %v", own.job, queued, err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	msgs := mustOutbox(t, ctx, s, "")
	if len(msgs) != 2 {
		t.Fatalf("outbox = %+v, want nightly.1 and report.1", msgs)
	}
	for _, m := range msgs {
		if m.Key != m.Job+".1" {
			t.Errorf("message %s queued as job %s", m.Key, m.Job)
		}
	}
}

// TestPostgres_StatementsCannotEnqueueAsAnotherJob: a sql job's text holds its own run's secret
// in scheduler.run_secret, and with it cannot queue a message of another job; its own message
// still goes out.
func TestPostgres_StatementsCannotEnqueueAsAnotherJob(t *testing.T) {
	s, _ := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	if err := s.RaiseAll(ctx, []string{"nightly", "report"}, 10); err != nil {
		t.Fatal(err)
	}
	mustRunSecret(t, ctx, s, 10, "nightly", outboxSlot)
	res, err := s.ClaimMany(ctx, 10, "n1", []scheduler.SlotKey{{Job: "report", At: outboxSlot}})
	if err != nil || len(res) != 1 {
		t.Fatalf("claim: %v (err %v)", res, err)
	}
	a := scheduler.Attempt{Job: "report", Token: 10, Slot: outboxSlot, Attempt: 1,
		RunID: strconv.FormatInt(res[0].Run.RunID, 10), Fencer: s}
	const asNightly = `SELECT scheduler.outbox_enqueue('nightly', 10, 'nightly.1', 'email', 'a@example.test', 's', 'b',
		current_setting('scheduler.slot')::timestamptz, false)`
	if _, err := a.FencedStatements(ctx, "", asNightly); err == nil || errors.Is(err, ErrStale) {
		t.Fatalf("a text of job report queueing nightly's message: err %v, want a refusal", err)
	}
	const asReport = `SELECT scheduler.outbox_enqueue(current_setting('scheduler.job'), current_setting('scheduler.token')::bigint,
		'report.1', 'email', 'a@example.test', 's', 'b', current_setting('scheduler.slot')::timestamptz, false)`
	if _, err := a.FencedStatements(ctx, "", asReport); err != nil {
		t.Fatalf("its own message: %v", err)
	}
	if msgs := mustOutbox(t, ctx, s, ""); len(msgs) != 1 || msgs[0].Key != "report.1" || msgs[0].Job != "report" {
		t.Fatalf("outbox = %+v, want report.1 alone", msgs)
	}
}

// TestStore_RunSecret: a run's secret is stable for the run, differs between runs and stores,
// and is asked for by run id alone; SQLite gives none.
func TestStore_RunSecret(t *testing.T) {
	ctx := testCtx(t)
	s1, _ := mustPostgresStore(t, Config{})
	s2, _ := mustPostgresStore(t, Config{})
	a, err := s1.RunSecret(ctx, "7")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := s1.RunSecret(ctx, "7")
	other, _ := s1.RunSecret(ctx, "8")
	elsewhere, _ := s2.RunSecret(ctx, "7")
	if a != again || a == other || a == elsewhere || len(a) != 66 || a[:2] != "7." {
		t.Fatalf("secrets %q, %q, %q, %q: want one stable secret per run and store", a, again, other, elsewhere)
	}
	for _, bad := range []string{"", "0", "-1", "07", "7a", "1e3", "1000000000000000000"} {
		if _, err := s1.RunSecret(ctx, bad); err == nil {
			t.Errorf("RunSecret(%q): no error, want one naming the run id", bad)
		}
	}
	lite := mustOpen(t, Config{Path: filepath.Join(t.TempDir(), "scheduler.db")})
	if secret, err := lite.RunSecret(context.Background(), "7"); err != nil || secret != "" {
		t.Fatalf("SQLite secret %q (err %v), want none", secret, err)
	}
}

// TestPostgres_RunKeyIsTheOwnersAlone: the key every secret is made of is not readable by a role
// that default privileges on the schema gave SELECT on every new table.
func TestPostgres_RunKeyIsTheOwnersAlone(t *testing.T) {
	dsn := testenv.MustDatabase(t)
	s := openRaw(t, Config{DSN: dsn})
	ctx := testCtx(t)
	migrateTo(t, s, 12)
	reader := testenv.MustRole(t, dsn, "reader", `GRANT USAGE ON SCHEMA scheduler TO {role}`,
		`ALTER DEFAULT PRIVILEGES IN SCHEMA scheduler GRANT SELECT ON TABLES TO {role}`)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	conn := connectAs(t, ctx, reader)
	if _, err := conn.Exec(ctx, `SELECT key FROM scheduler.run_key`); sqlState(err) != "42501" {
		t.Fatalf("read run_key as a role with default SELECT: err %v, want permission denied (42501)", err)
	}
	// The default privilege holds for the tables made after it, as for run_key when it was made.
	owner := connectAs(t, ctx, dsn)
	if _, err := owner.Exec(ctx, `CREATE TABLE scheduler.later (x int)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT count(*) FROM scheduler.later`); err != nil {
		t.Fatalf("the default privilege does not hold for a later table: %v", err)
	}
}
