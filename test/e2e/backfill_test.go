package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// The backfill scenario's job: an hourly invoices job whose runs bill a few clients a little
// apart, so that a SIGKILL falls in the middle of one.
const (
	backfillJob     = "rebill"
	backfillClients = 3
	backfillDay     = "2026-01-10"
)

var backfillYAML = fmt.Sprintf(`  - name: %s
    schedule: "@hourly"
    type: builtin
    builtin: invoices
    params: {clients: %d, period: slot, delay: 100ms}
    overlap: skip
    retries: 0
    history: {max_age: 0s}
`, backfillJob, backfillClients)

// backfillKill: `scheduler backfill` of a past day's hourly slots, run as a process against
// three replicas; the leader gets SIGKILL in the middle of a backfilled run. The next leader
// carries on from the ledger: the command prints its progress and exits 0, every slot of the
// day has one run, marked backfilled and succeeded, the runs started in slot order, the killed
// run was taken over as its next attempt, and the invariants hold (each slot billed once, no
// stale write).
func (s *suite) backfillKill(t *testing.T) {
	d := s.deploy(t, deployOptions{jobs: backfillYAML, grace: 2 * time.Second})
	d.startAll()
	old := d.waitLeader(0, 30*time.Second)
	out := filepath.Join(d.dir, "backfill.out")
	cli := startProcess(t, "backfill", out, s.bins.scheduler, "backfill", backfillJob, "--from", backfillDay, "--to", backfillDay, "--config", d.cliCfg)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	count := func(cond string) int {
		var n int
		if err := d.db.QueryRow(ctx, `SELECT count(*) FROM scheduler.runs WHERE job = $1 AND backfill <> 0 AND `+cond, backfillJob).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testenv.Eventually(t, 30*time.Second, poll, "a third of the slots backfilled, the next one running", func() bool {
		return count(`status = 'succeeded'`) >= 8 && count(`status = 'running' AND started_at IS NOT NULL`) == 1
	})
	var killedSlot time.Time
	if err := d.db.QueryRow(ctx, `SELECT scheduled_at FROM scheduler.runs WHERE job = $1 AND backfill <> 0 AND status = 'running'`,
		backfillJob).Scan(&killedSlot); err != nil {
		t.Fatal(err)
	}
	d.signal(old.node, syscall.SIGKILL)
	next := d.waitLeader(old.token, 20*time.Second)
	code, err := cli.wait(40 * time.Second)
	if err != nil {
		t.Fatalf("%v; output:\n%s", err, cli.tail(30))
	}
	text, _ := os.ReadFile(out)
	if code != 0 || !strings.Contains(string(text), fmt.Sprintf("backfill %s: 24/24 slots (24 succeeded): done", backfillJob)) {
		t.Fatalf("backfill exited %d; output:\n%s", code, text)
	}
	t.Logf("SIGKILL %s (token %d) during the backfilled run of %s; %s (token %d) finished the backfill",
		old.node, old.token, killedSlot.UTC().Format(time.RFC3339), next.node, next.token)

	rows, err := d.db.Query(ctx, `SELECT scheduled_at, status, token, attempt, started_at FROM scheduler.runs
		WHERE job = $1 AND scheduled_at BETWEEN $2 AND $3 ORDER BY scheduled_at`, backfillJob,
		time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 10, 23, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var (
		n         int
		lastStart time.Time
		tokens    = map[int64]bool{}
	)
	for rows.Next() {
		var (
			slot, started time.Time
			status        string
			token         int64
			attempt       int
		)
		if err := rows.Scan(&slot, &status, &token, &attempt, &started); err != nil {
			t.Fatal(err)
		}
		n++
		tokens[token] = true
		wantAttempt := 1
		if slot.Equal(killedSlot) {
			wantAttempt = 2
		}
		if status != "succeeded" || attempt != wantAttempt {
			t.Errorf("slot %s: %s, attempt %d; want succeeded, attempt %d", slot.UTC().Format(time.RFC3339), status, attempt, wantAttempt)
		}
		if started.Before(lastStart) {
			t.Errorf("slot %s started at %s, before the slot before it (%s)", slot.UTC().Format(time.RFC3339), stamp(started), stamp(lastStart))
		}
		lastStart = started
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 24 || count(`status = 'succeeded'`) != 24 || !tokens[old.token] || !tokens[next.token] {
		t.Fatalf("%d runs of the day (%d backfilled and succeeded) under tokens %v: want 24 under %d and %d",
			n, count(`status = 'succeeded'`), tokens, old.token, next.token)
	}
	d.check(backfillJob, backfillClients)
}
