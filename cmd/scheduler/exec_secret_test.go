package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"scheduler"
	"scheduler/internal/testenv"
)

// secretScript queues one message in the transaction of its fence check, as the README's script
// pattern does, with the job and key psql is given and the run secret its session was started
// with.
const secretScript = `BEGIN \;
SELECT scheduler.fence_verify(:'job', :'token') \;
SELECT scheduler.outbox_enqueue(:'job', :'token', :'key', 'email', 'client-1@example.test', 'Invoice', 'Amount due',
    :'slot') \;
COMMIT;
`

// TestExecJob_QueuesWithItsRunSecret runs exec jobs through the real runner on Postgres, each
// a psql script as the same job role: the job's own script queues its message with the
// SCHEDULER_RUN_SECRET it is given (for its run's slot, a manual trigger's), which never reaches
// the stored output; scripts of another job, passing that job's fence check with the term's
// token, can neither queue a message as it nor one of its keys.
func TestExecJob_QueuesWithItsRunSecret(t *testing.T) {
	dsn := testenv.MustDatabase(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job.sql"), []byte(secretScript), 0o644); err != nil {
		t.Fatal(err)
	}
	command := func(job, key string) string {
		return fmt.Sprintf(`[sh, -c, 'echo "secret=$SCHEDULER_RUN_SECRET"; PGOPTIONS="-c scheduler.run_secret=$SCHEDULER_RUN_SECRET" exec psql -X -v ON_ERROR_STOP=1 -v job=%s -v key=%s `+
			`-v token="$SCHEDULER_FENCE_TOKEN" -v slot="$SCHEDULER_SCHEDULED_AT" -d "$(cat dsn)" -f job.sql']`,
			job, key)
	}
	const token = 100
	l := lead(t, fmt.Sprintf("store: {dsn: %q}\n", dsn), fmt.Sprintf(`
defaults: {schedule: "@yearly", type: exec, dir: %q}
jobs:
  - name: mailer
    command: %s
  - name: as-mailer
    command: %s
  - name: mailers-key
    command: %s
`, dir, command("mailer", `"mailer.$SCHEDULER_RUN_ID.1"`), command("mailer", `"mailer.$SCHEDULER_RUN_ID.2"`),
		command("mailers-key", `"mailer.$SCHEDULER_RUN_ID.3"`)), token)
	role := testenv.MustRole(t, dsn, "mailer_job",
		`GRANT USAGE ON SCHEMA scheduler TO {role}`,
		`GRANT EXECUTE ON FUNCTION scheduler.fence_verify(text, bigint) TO {role}`,
		`GRANT EXECUTE ON FUNCTION scheduler.outbox_enqueue(text, bigint, text, text, text, text, text, timestamptz, boolean) TO {role}`)
	if err := os.WriteFile(filepath.Join(dir, "dsn"), []byte(role), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, job := range []string{"as-mailer", "mailers-key"} {
		r := l.run(job)
		if r.Status != scheduler.StatusFailed || !strings.Contains(r.Output, "42501") && !strings.Contains(r.Output, "outbox:") {
			t.Fatalf("run of %s: %s (error %q, output %q), want failed by outbox_enqueue's refusal", job, r.Status, r.Error, r.Output)
		}
	}
	r := l.run("mailer")
	wantRun(t, r, scheduler.StatusSucceeded, token)
	ctx := context.Background()
	secret, err := l.store.RunSecret(ctx, strconv.FormatInt(r.RunID, 10))
	if err != nil {
		t.Fatal(err)
	}
	mac := secret[strings.IndexByte(secret, '.')+1:]
	if strings.Contains(r.Output, mac) || !strings.Contains(r.Output, fmt.Sprintf("secret=%d.[redacted]", r.RunID)) {
		t.Fatalf("output %q: want the secret replaced by [redacted] after the run id", r.Output)
	}
	msgs, err := l.store.Outbox(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Key != fmt.Sprintf("mailer.%d.1", r.RunID) || msgs[0].Job != "mailer" ||
		!msgs[0].ScheduledAt.Equal(r.ScheduledAt) || !msgs[0].Manual {
		t.Fatalf("outbox = %+v, want mailer's one message, of its run's slot %s, manual", msgs, r.ScheduledAt)
	}
}
