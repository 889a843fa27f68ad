package e2e

import (
	"fmt"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// etcdFaults kills etcd members under the replicas:
//
//  1. the etcd leader member: etcd elects another leader and renews every lease on its own, so
//     the scheduler's disruption (from the kill until a replica leads again, zero if the term
//     survives) stays within about two TTLs;
//  2. two of the three members, right after a run: without a quorum no lease can be renewed, the
//     leader ends its term within the TTL and no replica runs anything while the quorum is lost;
//  3. the quorum restored: a replica leads again and handles the slots missed meanwhile per the
//     job's misfire policy (once: the newest runs, the others are recorded missed, unbilled).
func (s *suite) etcdFaults(t *testing.T) {
	w := workload{schedule: "@every 5s", every: 5 * time.Second, clients: 10, delay: 200 * time.Millisecond}
	d := s.deploy(t, deployOptions{jobs: w.yaml()})
	d.startAll()
	d.waitLeader(0, 30*time.Second)
	d.waitRunStarted(invoicesJob, time.Now(), 30*time.Second)

	// 1. The etcd leader member crashes.
	tl := newTimeline(t, "EtcdFaults: etcd leader killed")
	before, _ := d.leader()
	victim := d.etcd.leaderIndex()
	killAt := time.Now()
	d.etcd.kill(victim)
	tl.start(killAt, fmt.Sprintf("SIGKILL etcd member m%d (the etcd leader); %s leads the scheduler, token %d", victim, before.node, before.token))
	newEtcd := d.etcd.leaderIndex()
	tl.mark(time.Now(), "etcd member m%d leads etcd", newEtcd)
	window := killAt.Add(4 * ttl)
	var disruption time.Duration
	testenv.Eventually(d.t, 6*ttl, poll, "the scheduler term to survive or a new one to start", func() bool {
		cur, _ := d.termOf(before.token)
		if cur.ended.IsZero() {
			return time.Now().After(window)
		}
		if l, ok := d.leader(); ok && l.token > before.token {
			tl.mark(cur.ended, "%s's term ends (%s)", before.node, cur.reason)
			tl.mark(l.won, "%s wins, token %d", l.node, l.token)
			disruption = l.won.Sub(killAt)
			return true
		}
		return false
	})
	tl.figure("scheduler_disruption_ms", ms(disruption))
	if disruption > 3*ttl {
		t.Errorf("no replica led for %v after the etcd leader was killed, want about 2 TTLs (at most 3)", disruption)
	}
	tl.print()
	d.etcd.restart(victim)
	if err := d.etcd.waitReady(victim, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	// 2. Two members crash right after a run finished, so no run is cut short.
	leader, _ := d.leader()
	run := d.waitRunStarted(invoicesJob, time.Now(), 30*time.Second)
	d.waitFinished(invoicesJob, run.slot, 30*time.Second)
	tl = newTimeline(t, "EtcdFaults: quorum lost and restored")
	leader, _ = d.leader()
	a := d.etcd.leaderIndex()
	b := (a + 1) % 3
	lostAt := time.Now()
	d.etcd.kill(a)
	d.etcd.kill(b)
	tl.start(lostAt, fmt.Sprintf("SIGKILL etcd members m%d and m%d: no quorum; %s leads, token %d", a, b, leader.node, leader.token))
	var ended term
	testenv.Eventually(d.t, 3*ttl, poll, leader.node+"'s term to end", func() bool {
		ended, _ = d.termOf(leader.token)
		return !ended.ended.IsZero()
	})
	tl.mark(ended.ended, "%s ends its term (%s)", leader.node, ended.reason)
	tl.figure("stepdown_ms", ms(ended.ended.Sub(lostAt)))
	if ended.ended.Sub(lostAt) > ttl {
		t.Errorf("%s ended its term %v after the quorum was lost, want within the TTL (%v)", leader.node, ended.ended.Sub(lostAt), ttl)
	}
	quiet := lostAt.Add(ttl + w.every + time.Second)
	sleepUntil(quiet)
	if l, ok := d.leader(); ok {
		t.Errorf("%s leads (token %d) without an etcd quorum", l.node, l.token)
	}
	snap := d.snapshot()
	for _, i := range snap.invoices {
		if i.Created.After(lostAt.Add(ttl)) {
			t.Errorf("invoice of client %d for %s written at %s, more than a TTL after the quorum was lost at %s", i.Client, i.Month, stamp(i.Created), stamp(lostAt))
		}
	}
	for _, r := range snap.runs {
		if r.Finished != nil && r.Finished.After(lostAt.Add(ttl)) {
			t.Errorf("slot %s %s at %s, more than a TTL after the quorum was lost", stamp(r.Slot), r.Status, stamp(*r.Finished))
		}
	}

	// 3. The quorum comes back.
	d.etcd.restart(a)
	d.etcd.restart(b)
	restoredAt := time.Now()
	tl.mark(restoredAt, "members m%d and m%d restarted", a, b)
	back := d.waitLeader(leader.token, 30*time.Second)
	tl.mark(back.won, "%s wins, token %d", back.node, back.token)
	tl.figure("outage_ms", ms(back.won.Sub(lostAt)))
	after := d.waitRunStarted(invoicesJob, w.nextSlot(back.won), 30*time.Second)
	d.waitFinished(invoicesJob, after.slot, 30*time.Second)
	snap = d.check(invoicesJob, w.clients)
	runs := snap.slotRuns(invoicesJob)
	var missed, caughtUp int
	for slot := w.nextSlot(lostAt); slot.Before(back.won); slot = slot.Add(w.every) {
		r, ok := runs[slot]
		switch {
		case !ok:
			t.Errorf("slot %s, due during the outage, has no ledger row", stamp(slot))
		case r.Status == "missed":
			missed++
		case r.Status == "succeeded" && r.Token == back.token:
			caughtUp++
		default:
			t.Errorf("slot %s, due during the outage: %s under token %d", stamp(slot), r.Status, r.Token)
		}
	}
	tl.figure("slots_missed", missed)
	tl.figure("slots_caught_up", caughtUp)
	tl.print()
	if caughtUp != 1 {
		t.Errorf("%d slots due during the outage ran after it, want 1 (misfire: once)", caughtUp)
	}
	if r := runs[after.slot]; r.Status != "succeeded" {
		t.Errorf("slot %s after the outage: %s, want succeeded", stamp(after.slot), r.Status)
	}
}
