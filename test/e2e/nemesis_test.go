package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

var (
	nemesisSeedFlag     = flag.Uint64("nemesis.seed", 0, "seed of the nemesis's schedule of faults; 0 picks one (printed, for replay)")
	nemesisDurationFlag = flag.Duration("nemesis.duration", 0, "how long the nemesis injects faults, per backend; 0: the short run (30s for etcd, 15s for each other backend)")
	nemesisBackendFlag  = flag.String("nemesis.backend", "all", "election backend the nemesis runs against: etcd, postgres, zookeeper, redis or all")
)

// Jobs of the nemesis's workload beside the invoices builtin.
const (
	markerJob = "marker" // exec: appends "<slot> <token> <attempt> <nanoseconds>" to a file as it ends
	rowsJob   = "rows"   // sql: inserts the slot's row unless it exists
	// hookJob (http: POSTs to the suite's receiver) is in nemesis_receiver_test.go.
)

// nemesisEvery is the period of every job of the nemesis's workload.
const nemesisEvery = 5 * time.Second

// nemesisClients is how many clients the invoices job bills per slot, 200 ms apart.
const nemesisClients = 10

// Short runs, the default, so that `make test` runs the nemesis on every backend and stays within
// its time budget: etcd, which has the most kinds of faults, gets the longest.
const (
	nemesisShortEtcd  = 30 * time.Second
	nemesisShortOther = 15 * time.Second
)

// nemesisBackends returns the backends named by flag, in the suite's spelling ("" for etcd).
func nemesisBackends(name string) ([]string, error) {
	switch name {
	case "all":
		return append([]string{"etcd"}, backendNames...), nil
	case "etcd":
		return []string{"etcd"}, nil
	}
	if slices.Contains(backendNames, name) {
		return []string{name}, nil
	}
	return nil, fmt.Errorf("-nemesis.backend=%q: want etcd, postgres, zookeeper, redis or all", name)
}

// TestNemesis runs the seed's workload (the invoices builtin with its e-mails through the
// outbox, an exec job with a countable side effect and a sql job) on three replicas, with each
// chosen election backend, while a nemesis injects random faults, one or several at a time; it
// checks the invariants from the data as it goes and at the end, and liveness once the faults
// stop. See RELIABILITY.md (Nemesis) and `make soak`.
func TestNemesis(t *testing.T) {
	backends, err := nemesisBackends(*nemesisBackendFlag)
	if err != nil {
		t.Fatal(err)
	}
	env := readEnv()
	s := &suite{env: env, seed: *nemesisSeedFlag, reps: 1}
	if s.seed == 0 {
		s.seed = uint64(time.Now().UnixNano())
	}
	t.Logf("nemesis seed %d: replay with -nemesis.seed=%d -nemesis.backend=%s -nemesis.duration=%s",
		s.seed, s.seed, *nemesisBackendFlag, *nemesisDurationFlag)
	s.bins = buildBinaries(t, len(env.etcd) == 0)
	s.pg = newPGServer(t, env)
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			bs := *s
			if b != "etcd" {
				bs.backend = b
			}
			dur := *nemesisDurationFlag
			switch {
			case dur > 0:
			case b == "etcd":
				dur = nemesisShortEtcd
			default:
				dur = nemesisShortOther
			}
			bs.nemesis(t, b, dur, nil)
		})
	}
}

// nemesisJobs is the workload's jobs section, the http job calling hookURL last; the outbox
// section after it ends the list.
func nemesisJobs(marks, smtpAddr, hookURL string) string {
	return fmt.Sprintf(`  - name: %s
    schedule: "@every %s"
    type: builtin
    builtin: invoices
    params: {clients: %d, delay: 200ms, period: slot, email_to: "client-{client}@example.test"}
    overlap: queue
    timeout: 1m
    retries: 5
    retry_backoff: 1s
  - name: %s
    schedule: "@every %s"
    type: exec
    command: [sh, -c, 'sleep 1; echo "$SCHEDULER_SCHEDULED_AT $SCHEDULER_FENCE_TOKEN $SCHEDULER_ATTEMPT $(date +%%s%%N)" >> %s']
    timeout: 30s
  - name: %s
    schedule: "@every %s"
    type: sql
    sql: "INSERT INTO public.nemesis_rows (slot, token) SELECT current_setting('scheduler.slot')::timestamptz, current_setting('scheduler.token')::bigint WHERE NOT EXISTS (SELECT 1 FROM public.nemesis_rows WHERE slot = current_setting('scheduler.slot')::timestamptz)"
    retries: 3
    retry_backoff: 1s
%soutbox: {smtp: {addr: %q, from: billing@example.test, tls: none}, retry_backoff: 1s}
`, invoicesJob, nemesisEvery, nemesisClients, markerJob, nemesisEvery, marks, rowsJob, nemesisEvery, hookJobYAML(hookURL), smtpAddr)
}

// nemesisRowsSQL creates the sql job's table, without a key so that a slot written twice shows,
// and audits its writes like the ledger's and the invoices' (auditSQL).
const nemesisRowsSQL = `
CREATE TABLE public.nemesis_rows (slot timestamptz NOT NULL, token bigint NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TRIGGER e2e_written AFTER INSERT OR UPDATE OR DELETE ON public.nemesis_rows FOR EACH STATEMENT EXECUTE FUNCTION e2e.written();
`

// nemesis is one backend's run: the deployment, the faults for dur (the seed's draws, or
// script's faults when it is set, from a moment just after a slot), liveness once they stop,
// then the jobs paused, the outbox drained and the data checked. It returns the nemesis and
// the final check's report.
func (s *suite) nemesis(t *testing.T, backend string, dur time.Duration, script []scripted) (*nemesis, nemesisReport) {
	smtp := testenv.MustSMTP(t, testenv.SMTPOptions{})
	rc := mustReceiver(t)
	marks := filepath.Join(t.TempDir(), "marks")
	d := s.deploy(t, deployOptions{jobs: nemesisJobs(marks, smtp.Addr, rc.srv.URL)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_, err := d.db.Exec(ctx, nemesisRowsSQL)
	cancel()
	if err != nil {
		t.Fatalf("create the sql job's table: %v", err)
	}
	started := time.Now()
	d.startAll()
	d.waitLeader(0, 30*time.Second)

	n := newNemesis(t, d, backend, s.seed, marks, started)
	n.rc, n.role = rc, jobRoleDSN(t, d)
	if script != nil {
		n.script = script
		sleepUntil(time.Now().Truncate(nemesisEvery).Add(nemesisEvery + scriptPhase))
	}
	n.run(dur)
	n.liveness()
	n.settle()

	// Final check: every replica stopped, the whole history read.
	for _, node := range nodes {
		d.replicas[node].proc.kill()
	}
	snap := d.snapshot()
	emails := smtp.Messages()
	data, err := n.read(snap, time.Time{}, emails)
	if err != nil {
		t.Fatal(err)
	}
	rep := checkNemesis(data, true)
	for _, v := range rep.violations {
		n.violation(v)
	}
	n.summary(snap, rep, len(emails))
	return n, rep
}

// readMarks parses the exec job's file: one line per execution that reached its end.
func readMarks(path string) ([]mark, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the marks: %w", err)
	}
	var out []mark
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m mark
		var slot string
		var nanos int64
		if _, err := fmt.Sscanf(line, "%s %d %d %d", &slot, &m.Token, &m.Attempt, &nanos); err != nil {
			return nil, fmt.Errorf("mark %q: %w", line, err)
		}
		if m.Slot, err = time.Parse(time.RFC3339, slot); err != nil {
			return nil, fmt.Errorf("mark %q: %w", line, err)
		}
		m.Slot, m.At = m.Slot.UTC(), time.Unix(0, nanos)
		out = append(out, m)
	}
	return out, nil
}

// readRows reads the sql job's table.
func (d *deployment) readRows(ctx context.Context) ([]slotRow, error) {
	rows, err := d.db.Query(ctx, `SELECT slot, token, at FROM public.nemesis_rows ORDER BY slot, at`)
	if err != nil {
		return nil, fmt.Errorf("read the sql job's rows: %w", err)
	}
	defer rows.Close()
	var out []slotRow
	for rows.Next() {
		var r slotRow
		if err := rows.Scan(&r.Slot, &r.Token, &r.At); err != nil {
			return nil, fmt.Errorf("read the sql job's rows: %w", err)
		}
		r.Slot = r.Slot.UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}
