package fence

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"scheduler"
	"scheduler/internal/testenv"
)

// reOutboxScript is the README's script that queues a message after its fence check.
var reOutboxScript = regexp.MustCompile("(?s)\n( *)```sql\n(( *)(?:\\\\getenv [^\n]*\n *)?BEGIN \\\\;\n[^`]*?outbox_enqueue.*?)\n *```\n")

// TestPostgres_OutboxScript runs the README's outbox script, its exact text, with the real psql
// as a job role granted fence_verify and outbox_enqueue: a token that is not the fence queues
// nothing and bills nothing; the fence's token commits the invoice with its message, and a redo
// queues nothing twice.
func TestPostgres_OutboxScript(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := reOutboxScript.FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("README: no sql block calling outbox_enqueue after BEGIN \\;")
	}
	const withSecret = `PGOPTIONS="-c scheduler.run_secret=$SCHEDULER_RUN_SECRET" psql -X -v ON_ERROR_STOP=1`
	if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), withSecret) {
		t.Fatalf("README: the outbox script is not run with %s", withSecret)
	}
	var lines []string
	for _, l := range strings.Split(m[2], "\n") {
		lines = append(lines, strings.TrimPrefix(l, m[3]))
	}
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	if err := s.RaiseAll(ctx, []string{"nightly"}, 500); err != nil {
		t.Fatal(err)
	}
	roleDSN := testenv.MustRole(t, dsn, "nightly_job", outboxRoleRecipe...)
	res, err := s.ClaimMany(ctx, 500, "n1", []scheduler.SlotKey{{Job: "nightly", At: outboxSlot}})
	if err != nil || len(res) != 1 {
		t.Fatalf("claim the run: %v (err %v)", res, err)
	}
	runID := strconv.FormatInt(res[0].Run.RunID, 10)
	secret, err := s.RunSecret(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job.sql"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The scheduler sets these for an exec job, as it sets the token.
	command := `export SCHEDULER_SCHEDULED_AT=2026-03-01T02:00:00Z SCHEDULER_RUN_ID=` + runID + ` SCHEDULER_RUN_SECRET=` + secret +
		`; PGOPTIONS="-c scheduler.run_secret=$SCHEDULER_RUN_SECRET" psql -X -v ON_ERROR_STOP=1 -v token="$SCHEDULER_FENCE_TOKEN" ` +
		`-v slot="$SCHEDULER_SCHEDULED_AT" -v run="$SCHEDULER_RUN_ID" -f job.sql`
	for _, tok := range []string{"400", "501"} {
		if out, code := runShell(t, ctx, dir, command, roleDSN, tok); code != 3 || !strings.Contains(out, "fenced out") {
			t.Fatalf("token %s against fence 500: exit %d, want 3 and fence_verify's refusal\n%s", tok, code, out)
		}
	}
	msgs, err := s.Outbox(ctx, "", 10)
	if err != nil || len(msgs) != 0 || countInvoices(t, ctx, s) != 0 {
		t.Fatalf("after stale tokens: %d messages (%v), %d invoices; want none", len(msgs), err, countInvoices(t, ctx, s))
	}
	for range 2 {
		if out, code := runShell(t, ctx, dir, command, roleDSN, "500"); code != 0 {
			t.Fatalf("token 500, the fence: exit %d\n%s", code, out)
		}
	}
	msgs, err = s.Outbox(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Key != "nightly."+runID+".1" || msgs[0].Job != "nightly" || msgs[0].Token != 500 ||
		msgs[0].Destination != "client-1@example.test" || msgs[0].ScheduledAt.UTC().Format("2006-01-02T15:04:05Z") != "2026-03-01T02:00:00Z" {
		t.Fatalf("outbox = %+v, want the one message nightly.<run>.1 of the slot with token 500", msgs)
	}
	if n := countInvoices(t, ctx, s); n != 1 {
		t.Fatalf("%d invoices, want 1", n)
	}
}
