package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// killOnlyReplicaMidRun deploys w, starts replica a alone and kills it once a run has billed
// billed clients; the timeline title starts at the kill.
func (s *suite) killOnlyReplicaMidRun(t *testing.T, w workload, billed int, title string) (*deployment, runStart, *timeline) {
	t.Helper()
	d := s.deploy(t, deployOptions{jobs: w.yaml()})
	d.start("a")
	d.waitLeader(0, 30*time.Second)
	run := d.waitRunStarted(invoicesJob, time.Now(), 30*time.Second)
	testenv.Eventually(t, 10*time.Second, poll, fmt.Sprintf("%d invoices of the slot", billed), func() bool {
		return len(d.snapshot().invoicesOf(run.slot)) >= billed
	})
	tl := newTimeline(t, title)
	killAt := time.Now()
	d.signal("a", syscall.SIGKILL)
	tl.start(killAt, fmt.Sprintf("SIGKILL a, the only replica, %d ms into the run of slot %s", ms(killAt.Sub(run.at)), stamp(run.slot)))
	return d, run, tl
}

// orphanOutlived kills the only replica in the middle of a run and starts another one after the
// next slot has come due. The README promises that "a slot interrupted by a failover is finished
// by the next leader"; with the default misfire policy (once) the new leader's catch-up sees two
// candidates, the interrupted slot and the newer one, runs only the newer and records the
// interrupted slot missed, so the clients it had billed stay billed and the rest never are: a
// slot both missed and billed.
func (s *suite) orphanOutlived(t *testing.T) {
	w := workload{schedule: "@every 6s", every: 6 * time.Second, clients: 10, delay: 200 * time.Millisecond}
	d, run, tl := s.killOnlyReplicaMidRun(t, w, 3, "OrphanOutlivedByNextSlot")
	sleepUntil(run.slot.Add(w.every + time.Second))
	d.start("b")
	tl.mark(time.Now(), "b starts, after slot %s came due", stamp(run.slot.Add(w.every)))
	next := d.waitLeader(0, 30*time.Second)
	tl.mark(next.won, "%s wins, token %d", next.node, next.token)
	fin := d.waitFinished(invoicesJob, run.slot, 30*time.Second)
	d.waitFinished(invoicesJob, run.slot.Add(w.every), 30*time.Second)
	billed := len(d.snapshot().invoicesOf(run.slot))
	tl.figure("interrupted_slot", fin.Status)
	tl.figure("interrupted_slot_invoices", billed)
	tl.print()
	if fin.Status != "succeeded" || billed != w.clients {
		t.Errorf("slot %s, interrupted by the crash: %s (%s) with %d of %d invoices; want it finished by the next leader",
			stamp(run.slot), fin.Status, fin.Reason, billed, w.clients)
	}
	d.check(invoicesJob, w.clients)
}

// attemptsWhileStoreDown cuts the only replica off from Postgres for 2.5 s in the middle of a run
// (retries: 5, retry_backoff: 0.5s). Attempts fail while Postgres is unreachable, and so does
// the ledger write that records each retry's attempt number; the run goes on and succeeds once
// Postgres is back. Each attempt must have its own number (jobs receive it), and the ledger's
// attempt must count them all: it is what `history` shows, what the retry limit is about, and
// what the next leader numbers its own attempt from.
func (s *suite) attemptsWhileStoreDown(t *testing.T) {
	w := workload{schedule: "@every 10s", every: 10 * time.Second, clients: 3, delay: 200 * time.Millisecond,
		extra: "    retries: 5\n    retry_backoff: 500ms\n"}
	d := s.deploy(t, deployOptions{jobs: w.yaml()})
	d.start("a")
	d.waitLeader(0, 30*time.Second)
	run := d.waitRunStarted(invoicesJob, time.Now(), 30*time.Second)
	sleepUntil(run.at.Add(100 * time.Millisecond))
	tl := newTimeline(t, "AttemptsCountedWhileStoreDown")
	cutAt := time.Now()
	d.replicas["a"].pg.Cut()
	tl.start(cutAt, fmt.Sprintf("a cut off from Postgres for 2.5 s, %d ms into the run of slot %s", ms(cutAt.Sub(run.at)), stamp(run.slot)))
	time.Sleep(2500 * time.Millisecond)
	d.replicas["a"].pg.Resume()
	tl.mark(time.Now(), "a reaches Postgres again")
	fin := d.waitFinished(invoicesJob, run.slot, 30*time.Second)
	var numbers []int
	for _, r := range d.runStarts(invoicesJob) {
		if r.slot.Equal(run.slot) {
			numbers = append(numbers, r.attempt)
			tl.mark(r.at, "attempt %d starts", r.attempt)
		}
	}
	tl.figure("attempts_made", len(numbers))
	tl.figure("ledger_attempt", fin.Attempt)
	tl.print()
	if fin.Status != "succeeded" || fin.Attempt != len(numbers) {
		t.Errorf("slot %s: %s, attempt %d in the ledger; the replica made %d attempts, numbered %v",
			stamp(run.slot), fin.Status, fin.Attempt, len(numbers), numbers)
	}
	for i, n := range numbers {
		if n != i+1 {
			t.Errorf("attempt %d of slot %s was numbered %d (all: %v), want every attempt numbered in turn", i+1, stamp(run.slot), n, numbers)
			break
		}
	}
	d.check(invoicesJob, w.clients)
}
