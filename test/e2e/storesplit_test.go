package e2e

import (
	"bufio"
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

// otherSchema is the store.schema of the misconfigured replica: the same database, another
// ledger.
const otherSchema = "elsewhere"

// storeSplit runs one election with two replicas whose stores differ: b's configuration names
// another store.schema of the same database, as a host whose file was edited by mistake would.
// Replica a leads first and runs an exec job every second (misfire all, so a new leader catches
// up what its ledger lacks); a stops, b starts; then a starts again and b stops. Each slot's
// effect is a line the job appends to a file, so the data says how often each slot ran. b must
// never lead: its ledger stays empty and it never starts a run, and no slot runs twice across
// the handovers, though b's ledger would see none of a's runs and a's none of b's.
func (s *suite) storeSplit(t *testing.T) {
	if s.backend != "" {
		t.Fatalf("the store split scenario runs with etcd, not %s", s.backend)
	}
	effects := filepath.Join(t.TempDir(), "effects")
	jobs := fmt.Sprintf(`  - name: tick
    schedule: "* * * * * *"
    type: exec
    command: ["sh", "-c", "echo \"$SCHEDULER_SCHEDULED_AT\" >> %s"]
    misfire: all
    catchup: 1m
`, effects)
	d := s.deploy(t, deployOptions{jobs: jobs, grace: 2 * time.Second})
	b := d.replicas["b"]
	body, err := os.ReadFile(b.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.config, []byte(strings.Replace(string(body), "store: {", "store: {schema: "+otherSchema+", ", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	runCLIWith(t, s.bins.scheduler, childEnv(), "migrate", "--config", b.config)

	lines := func() int { return len(readEffects(t, effects)) }
	d.start("a")
	testenv.Eventually(t, 30*time.Second, poll, "a to run three slots", func() bool { return lines() >= 3 })
	stopReplica(t, d, "a")

	d.start("b")
	refused := func() bool { return logged(b.log, "not the deployment's store") }
	before := lines()
	// Without the check, b leads and runs slots into its own ledger; with it, b says why not.
	testenv.Eventually(t, 30*time.Second, poll, "b to run three slots or refuse to lead", func() bool {
		return lines() >= before+3 || refused()
	})

	led := len(terms("a", readLog(d.replicas["a"].log)))
	a := d.start("a")
	stopReplica(t, d, "b")
	testenv.Eventually(t, 30*time.Second, poll, "a to lead again", func() bool { return len(terms("a", readLog(a.log))) > led })
	before = lines()
	testenv.Eventually(t, 30*time.Second, poll, "a to run three more slots", func() bool { return lines() >= before+3 })
	d.replicas["a"].proc.kill()

	seen := map[string]int{}
	for _, slot := range readEffects(t, effects) {
		if seen[slot]++; seen[slot] == 2 {
			t.Errorf("slot %s ran more than once", slot)
		}
	}
	var runs int
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.db.QueryRow(ctx, "SELECT count(*) FROM "+otherSchema+".runs").Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if runs != 0 {
		t.Errorf("b's ledger holds %d runs, want none: a replica whose store is not the deployment's must not lead", runs)
	}
	for _, e := range readLog(b.log) {
		if e.Msg == "run started" || e.Msg == "leading" {
			t.Errorf("b logged %q (token %d), want it never to lead", e.Msg, e.Token)
		}
	}
	if !refused() {
		t.Errorf("b never logged that its store is not the deployment's; its log:\n%s", b.proc.tail(20))
	}
}

// stopReplica sends node SIGTERM and waits for it to exit.
func stopReplica(t *testing.T, d *deployment, node string) {
	t.Helper()
	d.signal(node, syscall.SIGTERM)
	if _, err := d.replicas[node].proc.wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// logged reports whether the log at path has a line containing s.
func logged(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), s)
}

// readEffects returns the slots the job's runs appended to path, one a line.
func readEffects(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}
