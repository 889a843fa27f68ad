package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// postgresRestart restarts Postgres while a run has billed some clients, refusing new
// connections for two seconds: the attempt fails,
// is retried after the backoff, and the slot ends with every invoice once, none partial or
// twice. Against an external Postgres, which the suite may not restart, the restart is
// simulated: every replica's connection is cut and its sessions terminated, and new
// connections are refused for two seconds.
func (s *suite) postgresRestart(t *testing.T) {
	w := seedWorkload
	w.extra = "    retries: 3\n    retry_backoff: 1s\n"
	d := s.deploy(t, deployOptions{jobs: w.yaml()})
	d.startAll()
	leader := d.waitLeader(0, 30*time.Second)
	run := d.waitRunStarted(invoicesJob, time.Now(), 40*time.Second)
	testenv.Eventually(d.t, 10*time.Second, poll, "three invoices of the slot", func() bool {
		return len(d.snapshot().invoicesOf(run.slot)) >= 3
	})
	tl := newTimeline(t, "PostgresRestart")
	restartAt := time.Now()
	if s.pg.own != nil {
		tl.start(restartAt, fmt.Sprintf("restart Postgres (fast shutdown), new connections refused for 2 s, %d ms into the run of slot %s", ms(restartAt.Sub(run.at)), stamp(run.slot)))
		// The replicas' connections are cut over the restart too: a restart of a tenth of a
		// second can fall between two of the job's transactions, and a pool that meets a dead
		// connection elsewhere first (the outbox's dispatcher shares it) then hands the job a
		// new one, so the attempt would not see the restart at all.
		for _, n := range nodes {
			d.replicas[n].pg.Cut()
		}
		s.pg.own.Restart(t)
		time.Sleep(2 * time.Second)
		for _, n := range nodes {
			d.replicas[n].pg.Resume()
		}
	} else {
		tl.start(restartAt, fmt.Sprintf("external Postgres: cut every replica's connection and terminate its sessions for 2 s, %d ms into the run of slot %s",
			ms(restartAt.Sub(run.at)), stamp(run.slot)))
		for _, n := range nodes {
			d.replicas[n].pg.Cut()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := d.db.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE application_name LIKE 'e2e-%' AND application_name <> 'e2e-test'`)
		cancel()
		if err != nil {
			t.Fatalf("terminate the replicas' sessions: %v", err)
		}
		time.Sleep(2 * time.Second)
		for _, n := range nodes {
			d.replicas[n].pg.Resume()
		}
	}
	tl.mark(time.Now(), "Postgres accepts connections again")
	fin := d.waitFinished(invoicesJob, run.slot, 60*time.Second)
	if fin.Finished != nil {
		tl.mark(*fin.Finished, "slot %s %s, attempt %d, token %d", stamp(run.slot), fin.Status, fin.Attempt, fin.Token)
	}
	retries := retryLines(d, restartAt)
	tl.figure("attempt", fin.Attempt)
	tl.figure("retries_logged", len(retries))
	for _, e := range retries {
		tl.mark(e.TS, "%s: attempt %d failed, retrying: %.80s", e.Node, e.Attempt, e.Error)
	}
	if fin.Status != "succeeded" || fin.Attempt < 2 {
		t.Errorf("slot %s: %s at attempt %d, want succeeded after a retry (attempt >= 2)", stamp(run.slot), fin.Status, fin.Attempt)
	}
	if l, ok := d.leader(); !ok || l.token != leader.token {
		t.Errorf("leadership changed over a Postgres restart: %+v, want %s's term %d to go on", l, leader.node, leader.token)
	}
	next := d.waitRunStarted(invoicesJob, run.slot, 30*time.Second)
	d.waitFinished(invoicesJob, next.slot, 30*time.Second)
	tl.print()
	d.check(invoicesJob, w.clients)
}

// slowStore adds a latency of a second each way (two-second round trips) between every replica
// and Postgres for twelve seconds, a second into a run. An attempt then takes longer than its
// timeout (5 s): it times out, is retried after the backoff, and once the latency is gone a
// retry finishes the slot with every invoice once.
func (s *suite) slowStore(t *testing.T) {
	w := seedWorkload
	w.timeout = 5 * time.Second
	w.extra = "    retries: 3\n    retry_backoff: 1s\n"
	d := s.deploy(t, deployOptions{jobs: w.yaml()})
	d.startAll()
	leader := d.waitLeader(0, 30*time.Second)
	run := d.waitRunStarted(invoicesJob, time.Now(), 40*time.Second)
	sleepUntil(run.at.Add(time.Second))
	latency, hold := time.Second, 12*time.Second
	tl := newTimeline(t, "SlowStore")
	slowAt := time.Now()
	for _, n := range nodes {
		d.replicas[n].pg.Delay(latency)
	}
	tl.start(slowAt, fmt.Sprintf("Postgres latency %d ms each way, %d ms into the run of slot %s", ms(latency), ms(slowAt.Sub(run.at)), stamp(run.slot)))
	sleepUntil(slowAt.Add(hold))
	for _, n := range nodes {
		d.replicas[n].pg.Delay(0)
	}
	tl.mark(time.Now(), "latency removed")
	fin := d.waitFinished(invoicesJob, run.slot, 90*time.Second)
	if fin.Finished != nil {
		tl.mark(*fin.Finished, "slot %s %s, attempt %d", stamp(run.slot), fin.Status, fin.Attempt)
	}
	retries := retryLines(d, slowAt)
	timeouts := 0
	for _, e := range retries {
		tl.mark(e.TS, "%s: attempt %d failed, retrying: %.80s", e.Node, e.Attempt, e.Error)
		if strings.Contains(e.Error, "timed out") {
			timeouts++
		}
	}
	tl.figure("attempt", fin.Attempt)
	tl.figure("attempts_timed_out", timeouts)
	if fin.Status != "succeeded" || fin.Attempt < 2 {
		t.Errorf("slot %s: %s at attempt %d, want succeeded after a retry", stamp(run.slot), fin.Status, fin.Attempt)
	}
	if timeouts < 1 {
		t.Errorf("no attempt timed out under a latency of %v each way, want the first to time out (timeout 5s)", latency)
	}
	if l, ok := d.leader(); !ok || l.token != leader.token {
		t.Errorf("leadership changed under a slow store: %+v, want %s's term %d to go on", l, leader.node, leader.token)
	}
	tl.print()
	d.check(invoicesJob, w.clients)
}

// retryLines returns the "attempt failed; retrying" lines logged since since.
func retryLines(d *deployment, since time.Time) []logEntry {
	var out []logEntry
	for _, n := range nodes {
		out = append(out, entriesAfter(readLog(d.replicas[n].log), "attempt failed; retrying", since)...)
	}
	return out
}
