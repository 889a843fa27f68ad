package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// rollingRestart stops the leader with SIGTERM in the middle of a run, restarts it, and does
// that three times (so each replica is stopped once), under a job that fires every second and
// runs for 0.6 s. The leader finishes its run, resigns, and a follower takes over at once: no
// slot is missed or run twice, and each handover takes a small part of the TTL.
func (s *suite) rollingRestart(t *testing.T) {
	w := workload{schedule: "* * * * * *", every: time.Second, clients: 3, delay: 300 * time.Millisecond,
		extra: "    misfire: all\n"}
	d := s.deploy(t, deployOptions{jobs: w.yaml()})
	d.startAll()
	d.waitLeader(0, 30*time.Second)
	first := d.waitRunStarted(invoicesJob, time.Now(), 30*time.Second).slot
	d.waitFinished(invoicesJob, first.Add(2*time.Second), 30*time.Second)

	stopped := map[string]bool{}
	for round := 1; round <= len(nodes); round++ {
		old, ok := d.leader()
		if !ok {
			t.Fatal("no leader before the restart")
		}
		tl := newTimeline(t, fmt.Sprintf("RollingRestart round %d", round))
		sleepUntil(w.nextSlot(time.Now()).Add(150 * time.Millisecond)) // a run is in flight
		termAt := time.Now()
		d.signal(old.node, syscall.SIGTERM)
		tl.start(termAt, fmt.Sprintf("SIGTERM %s (leader, token %d)", old.node, old.token))
		code, err := d.replicas[old.node].proc.wait(d.grace + 15*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		exitAt := time.Now()
		if code != 0 {
			t.Errorf("%s exited with status %d after SIGTERM, want 0", old.node, code)
		}
		stopped[old.node] = true
		next := d.waitLeader(old.token, 10*time.Second)
		ended, _ := d.termOf(old.token)
		tl.mark(ended.ended, "%s's term ends (%s)", old.node, ended.reason)
		tl.mark(next.won, "%s wins, token %d", next.node, next.token)
		tl.mark(exitAt, "%s has exited (status %d)", old.node, code)
		handover := next.won.Sub(ended.ended)
		tl.figure("handover_ms", ms(handover))
		tl.figure("sigterm_to_new_leader_ms", ms(next.won.Sub(termAt)))
		tl.figure("tokens", fmt.Sprintf("%d->%d", old.token, next.token))
		var drained []logEntry
		for _, e := range entriesAfter(readLog(d.replicas[old.node].log), "run finished", termAt) {
			if e.Slot.Before(termAt) {
				drained = append(drained, e)
				tl.mark(e.TS, "%s finishes the run of slot %s (%s) before resigning", old.node, stamp(e.Slot), e.Status)
			}
		}
		tl.figure("runs_drained", len(drained))
		if ended.ended.IsZero() || handover > ttl/2 {
			t.Errorf("handover from %s to %s took %v (term ended %s, next won %s), want under TTL/2 = %v",
				old.node, next.node, handover, stamp(ended.ended), stamp(next.won), ttl/2)
		}
		if ended.reason != "cancelled" {
			t.Errorf("%s's term ended with reason %q, want cancelled (a graceful shutdown)", old.node, ended.reason)
		}
		tl.print()
		d.start(old.node)
		d.waitFinished(invoicesJob, w.nextSlot(time.Now()).Add(time.Second), 30*time.Second)
	}
	if len(stopped) != len(nodes) && s.queuedCandidates() {
		t.Errorf("stopped %v, want every replica once", stopped)
	}

	// Every slot from the first to the last that has surely finished ran once and succeeded.
	last := w.nextSlot(time.Now()).Add(-3 * time.Second)
	d.waitFinished(invoicesJob, last, 30*time.Second)
	snap := d.check(invoicesJob, w.clients)
	runs := snap.slotRuns(invoicesJob)
	tl := newTimeline(t, "RollingRestart totals")
	n := 0
	for slot := first; !slot.After(last); slot = slot.Add(w.every) {
		n++
		r, ok := runs[slot]
		switch {
		case !ok:
			t.Errorf("slot %s has no run: missed by the handovers", stamp(slot))
		case r.Status != "succeeded" || r.Attempt != 1:
			t.Errorf("slot %s: %s, attempt %d (%s); want succeeded at the first attempt", stamp(slot), r.Status, r.Attempt, r.Reason+r.Error)
		}
	}
	tl.figure("slots", n)
	tl.figure("invoices", len(snap.invoices))
	tl.print()
}
