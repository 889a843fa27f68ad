package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// frozenLeader is the seed's experiment: SIGSTOP the leader's process group in the middle of a
// run for about three TTLs, then SIGCONT. A follower takes over with a higher token while the
// leader is frozen and finishes the slot, once; the woken leader's term is over the moment it
// runs again, nothing it writes after the takeover commits, and it rejoins as a follower.
// Repeated with a random pause point in the run and a random freeze of 2 to 4 TTLs.
func (s *suite) frozenLeader(t *testing.T) { s.leaderFaults(t, "FrozenLeader", false) }

// crashedLeader kills the leader's process group (SIGKILL) in the middle of a run: the next
// leader finishes the slot, once. Repeated with a random kill point.
func (s *suite) crashedLeader(t *testing.T) { s.leaderFaults(t, "CrashedLeader", true) }

func (s *suite) leaderFaults(t *testing.T, name string, crash bool) {
	w := seedWorkload
	d := s.deploy(t, deployOptions{jobs: w.yaml()})
	d.startAll()
	d.waitLeader(0, 30*time.Second)
	last := time.Now()
	for rep := 1; rep <= s.reps; rep++ {
		last = s.leaderFault(t, d, w, name, rep, last, crash)
	}
	d.check(invoicesJob, w.clients)
}

// leaderFault is one repetition: it freezes or kills the leader during the first run of a slot
// after after, and returns that slot.
func (s *suite) leaderFault(t *testing.T, d *deployment, w workload, name string, rep int, after time.Time, crash bool) time.Time {
	t.Helper()
	rng := s.rand(name, rep)
	tl := newTimeline(t, fmt.Sprintf("%s rep %d/%d (seed %d)", name, rep, s.reps, s.seed))
	run, old := d.runUnderLeader(after)
	point := 300*time.Millisecond + time.Duration(rng.Int64N(int64(w.runTime()-time.Second)))
	hold := 3 * ttl
	if rep > 1 {
		hold = 2*ttl + time.Duration(rng.Int64N(int64(2*ttl)))
	}
	sleepUntil(run.at.Add(point))
	stale := d.replicas[old.node].pg.StaleErrors()
	faultAt := time.Now()
	if crash {
		d.signal(old.node, syscall.SIGKILL)
		tl.start(faultAt, fmt.Sprintf("SIGKILL %s (token %d), %d ms into the run of slot %s", old.node, old.token, ms(faultAt.Sub(run.at)), stamp(run.slot)))
	} else {
		d.signal(old.node, syscall.SIGSTOP)
		tl.start(faultAt, fmt.Sprintf("SIGSTOP %s (token %d), %d ms into the run of slot %s, for %d ms", old.node, old.token, ms(faultAt.Sub(run.at)), stamp(run.slot), ms(hold)))
	}
	tl.mark(run.at, "%s starts the run of slot %s", old.node, stamp(run.slot))

	next := d.waitLeader(old.token, hold+15*time.Second)
	tl.mark(next.won, "%s wins the election, token %d", next.node, next.token)
	tl.figure("pause_point_ms", ms(faultAt.Sub(run.at)))
	tl.figure("takeover_ms", ms(next.won.Sub(faultAt)))
	tl.figure("tokens", fmt.Sprintf("%d->%d", old.token, next.token))

	if crash {
		if _, err := d.replicas[old.node].proc.wait(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	} else {
		sleepUntil(faultAt.Add(hold))
		contAt := time.Now()
		d.signal(old.node, syscall.SIGCONT)
		tl.mark(contAt, "SIGCONT %s", old.node)
		tl.figure("freeze_ms", ms(contAt.Sub(faultAt)))
		if !next.won.Before(contAt) {
			t.Errorf("%s took over at %s, after %s woke at %s: the freeze was too short to test a takeover", next.node, stamp(next.won), old.node, stamp(contAt))
		}
		var ended term
		testenv.Eventually(d.t, 15*time.Second, poll, old.node+"'s term to end after waking", func() bool {
			ended, _ = d.termOf(old.token)
			return !ended.ended.IsZero()
		})
		tl.mark(ended.ended, "%s's term %d ends (%s)", old.node, old.token, ended.reason)
		tl.figure("woken_stepdown_ms", ms(ended.ended.Sub(contAt)))
		testenv.Eventually(d.t, 20*time.Second, poll, old.node+" to rejoin as a follower", func() bool {
			st := d.status()
			return st.Leader != nil && st.Leader.Token == next.token && st.hasReplica(old.node)
		})
		entries := readLog(d.replicas[old.node].log)
		tl.figure("woken_writes_fenced_log", fencedWrites(entries, contAt))
		tl.figure("woken_runs_interrupted", len(entriesAfter(entries, "run interrupted; the next leader takes it over", contAt)))
		if again, ok := d.leader(); ok && again.node == old.node {
			t.Errorf("%s leads again (token %d) right after waking; want it to follow %s", old.node, again.token, next.node)
		}
	}

	fin := d.waitFinished(invoicesJob, run.slot, 40*time.Second)
	snap := d.snapshot()
	raised := raiseTime(snap.fencesOf(invoicesJob), next.token)
	tl.mark(raised, "fence raised to %d by %s", next.token, next.node)
	if fin.Finished != nil {
		tl.mark(*fin.Finished, "slot %s %s under token %d, attempt %d", stamp(run.slot), fin.Status, fin.Token, fin.Attempt)
	}
	byToken := map[int64]int{}
	for _, i := range snap.invoicesOf(run.slot) {
		byToken[i.Token]++
	}
	tl.figure("rows_old_token", byToken[old.token])
	tl.figure("rows_new_token", byToken[next.token])
	tl.figure("writes_fenced_wire", d.replicas[old.node].pg.StaleErrors()-stale)
	if fin.Status != "succeeded" || fin.Token != next.token || fin.Attempt < 2 {
		t.Errorf("slot %s: %s under token %d, attempt %d; want succeeded under the new token %d, taken over (attempt >= 2)",
			stamp(run.slot), fin.Status, fin.Token, fin.Attempt, next.token)
	}
	if n := byToken[old.token] + byToken[next.token]; n != w.clients {
		t.Errorf("slot %s: %d invoices under tokens %d and %d, want %d", stamp(run.slot), n, old.token, next.token, w.clients)
	}
	for _, v := range invariants(snap, invoicesJob, w.clients) {
		t.Error(v)
	}
	tl.print()
	if crash {
		d.start(old.node) // back to three replicas for the next repetition
	}
	return run.slot
}

// runUnderLeader waits for the first run of the invoices job for a slot after after, and returns
// it with the term it started under, which must still lead.
func (d *deployment) runUnderLeader(after time.Time) (runStart, term) {
	d.t.Helper()
	run := d.waitRunStarted(invoicesJob, after, 40*time.Second)
	old, ok := d.termOf(run.token)
	if !ok || !old.ended.IsZero() {
		d.t.Fatalf("the run of slot %s started under token %d, which no longer leads", stamp(run.slot), run.token)
	}
	return run, old
}

// termOf returns the term with token, from the replicas' logs.
func (d *deployment) termOf(token int64) (term, bool) {
	for _, tm := range d.terms() {
		if tm.token == token {
			return tm, true
		}
	}
	return term{}, false
}

// raiseTime returns when a fence of s was first raised to token, by the store's clock.
func raiseTime(s snapshot, token int64) time.Time {
	var at time.Time
	for _, r := range s.raises {
		if r.Token == token && (at.IsZero() || r.At.Before(at)) {
			at = r.At
		}
	}
	return at
}

// sleepUntil sleeps until t (at once if it has passed).
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }
