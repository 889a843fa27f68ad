package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// outcomeWriteLost cuts the only replica off from Postgres while an exec job runs, for long
// enough that the job ends and the write of its outcome fails, then gives Postgres back within
// the term. The job appends a line per execution to a file. Before, the outcome write was made
// once: the run stayed running in the ledger, and the next leader ran the slot again (the file
// held two lines of it). Now the write is retried while the term lasts: the file holds one line
// of the slot, and the ledger says succeeded, attempt 1.
func (s *suite) outcomeWriteLost(t *testing.T) {
	const (
		job   = "marker"
		every = 10 * time.Second
		runs  = 2 * time.Second // how long the job runs
		cut   = 4 * time.Second
	)
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	jobs := fmt.Sprintf(`  - name: %s
    schedule: "@every 10s"
    type: exec
    command: [sh, -c, 'echo "$SCHEDULER_SCHEDULED_AT $SCHEDULER_ATTEMPT $SCHEDULER_FENCE_TOKEN" >> %s; sleep %d']
    timeout: 30s
`, job, marks, int(runs/time.Second))
	d := s.deploy(t, deployOptions{jobs: jobs})
	d.start("a")
	leader := d.waitLeader(0, 30*time.Second)
	run := d.waitRunStarted(job, time.Now(), 30*time.Second)
	sleepUntil(run.at.Add(500 * time.Millisecond))
	tl := newTimeline(t, "OutcomeWriteLost")
	cutAt := time.Now()
	d.replicas["a"].pg.Cut()
	tl.start(cutAt, fmt.Sprintf("a cut off from Postgres for %s, %d ms into the run of slot %s; the job ends %s into its run",
		cut, ms(cutAt.Sub(run.at)), stamp(run.slot), runs))
	time.Sleep(cut)
	d.replicas["a"].pg.Resume()
	tl.mark(time.Now(), "a reaches Postgres again")
	fin := d.waitFinished(job, run.slot, 30*time.Second)
	if fin.Finished != nil {
		tl.mark(*fin.Finished, "slot %s %s, attempt %d, token %d", stamp(run.slot), fin.Status, fin.Attempt, fin.Token)
	}
	var retried int
	for _, e := range entriesAfter(readLog(d.replicas["a"].log), "record run outcome; retrying", cutAt) {
		if e.Job == job {
			retried++
			tl.mark(e.TS, "outcome write failed, retrying: %.80s", e.Error)
		}
	}
	// The job's own record of its executions of the slot.
	data, err := os.ReadFile(marks)
	if err != nil {
		t.Fatal(err)
	}
	var executions []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 3 {
			if at, err := time.Parse(time.RFC3339, fields[0]); err == nil && at.Equal(run.slot) {
				executions = append(executions, line)
			}
		}
	}
	tl.figure("executions", len(executions))
	tl.figure("outcome_retries_logged", retried)
	tl.figure("ledger_attempt", fin.Attempt)
	tl.print()
	if retried == 0 {
		t.Errorf("no outcome write of slot %s failed: the cut did not meet the write", stamp(run.slot))
	}
	if len(executions) != 1 {
		t.Errorf("slot %s executed %d times (%q), want once", stamp(run.slot), len(executions), executions)
	}
	if fin.Status != "succeeded" || fin.Attempt != 1 || fin.Token != leader.token {
		t.Errorf("slot %s: %s, attempt %d, token %d in the ledger; want succeeded, attempt 1, token %d",
			stamp(run.slot), fin.Status, fin.Attempt, fin.Token, leader.token)
	}
}
