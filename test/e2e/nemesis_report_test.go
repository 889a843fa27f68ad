package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"
)

// nemesisJobNames are the jobs of the nemesis's workload.
var nemesisJobNames = []string{invoicesJob, markerJob, rowsJob, hookJob}

// onTime is how late after its slot a run may start once the faults have stopped.
const onTime = time.Second

// tryStatus is `status --json`, or why it could not be read (the cluster still recovering).
func (d *deployment) tryStatus() (statusDoc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.s.bins.scheduler, "status", "--json", "--config", d.cliCfg)
	cmd.Env = childEnv()
	out, err := cmd.Output()
	var doc statusDoc
	if err != nil {
		return doc, fmt.Errorf("status --json: %w", err)
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return doc, fmt.Errorf("status --json: %w", err)
	}
	return doc, nil
}

// restartDelay is how long after a replica exited on its own it is started again: the
// RestartSec of the systemd unit the project ships (Restart=on-failure).
const restartDelay = 2 * time.Second

// startupWindow is how long after its start a replica exiting with code 1 counts as refusing to
// start (its store or coordinator unreachable), which its supervisor retries, and not as a crash.
const startupWindow = 30 * time.Second

// restartExited restarts, restartDelay after it was first seen down, every replica that exited
// while no fault held it. An exit with code 1 within startupWindow of its start is counted as a
// start-up refusal; any other exit is a violation.
func (n *nemesis) restartExited() {
	for _, node := range nodes {
		p := n.proc(node)
		if !p.exited() {
			// A fault's restart (a kill drawn meanwhile) may have come first.
			delete(n.exitSeen, node)
			continue
		}
		if n.busy["replica:"+node] {
			continue
		}
		seen, ok := n.exitSeen[node]
		if !ok {
			n.exitSeen[node] = time.Now()
			n.replicaDown(node, true)
			code := p.cmd.ProcessState.ExitCode()
			if code == 1 && time.Since(n.startedAt[node]) < startupWindow {
				n.startupExits++
				n.mark("%s refused to start (exit 1): %.160s", node, p.tail(1))
			} else {
				n.violation(fmt.Sprintf("replica %s exited on its own, code %d:\n%s", node, code, p.tail(20)))
			}
			continue
		}
		if time.Since(seen) >= restartDelay {
			n.start(node)
			delete(n.exitSeen, node)
			n.mark("%s restarted, as its supervisor would", node)
		}
	}
}

// start starts replica node and notes when: before it starts, so that a term it wins at once is
// never taken for one of the process before it.
func (n *nemesis) start(node string) {
	n.startedAt[node] = time.Now()
	n.d.start(node)
	n.replicaUp(node)
}

// anyExited reports whether a replica is not running.
func (n *nemesis) anyExited() bool {
	for _, node := range nodes {
		if n.proc(node).exited() {
			return true
		}
	}
	return false
}

// liveness checks that, once the faults have stopped, a leader leads within three TTLs (the
// cluster's view and the replica's own agree) and that the next two slots of every job start on
// time and succeed.
func (n *nemesis) liveness() {
	for len(n.exitSeen) > 0 || n.anyExited() {
		n.restartExited()
		time.Sleep(poll)
	}
	var lead term
	found := func() bool {
		st, err := n.d.tryStatus()
		if err != nil || st.Leader == nil {
			return false
		}
		l, ok := n.leader()
		lead = l
		return ok && l.token == st.Leader.Token
	}
	deadline := n.stopped.Add(3 * ttl)
	ok := false
	for !ok && time.Now().Before(deadline) {
		ok = found()
		if !ok {
			time.Sleep(4 * poll)
		}
	}
	if !ok {
		n.violation(fmt.Sprintf("no leader within 3 TTLs (%v) of the faults' end at %s", 3*ttl, stamp(n.stopped)))
		for !ok && time.Since(n.stopped) < 60*time.Second {
			ok = found()
			time.Sleep(4 * poll)
		}
		if !ok {
			n.t.Fatalf("no leader a minute after the faults stopped")
		}
	}
	n.leaderAt = time.Now()
	n.tl.mark(n.leaderAt, "%s leads (token %d), %d ms after the faults stopped", lead.node, lead.token, ms(n.leaderAt.Sub(n.stopped)))
	first := n.leaderAt.UTC().Truncate(nemesisEvery).Add(2 * nemesisEvery)
	for _, slot := range []time.Time{first, first.Add(nemesisEvery)} {
		for _, job := range nemesisJobNames {
			n.onTime(job, slot)
		}
	}
}

// onTime checks that job's slot starts within onTime of its time, or of the end of the run
// before it that it waited for, and succeeds.
func (n *nemesis) onTime(job string, slot time.Time) {
	deadline := slot.Add(20 * time.Second)
	var start time.Time
	for start.IsZero() && time.Now().Before(deadline) {
		for _, r := range n.runStarts(job) {
			if r.slot.Equal(slot) && (start.IsZero() || r.at.Before(start)) {
				start = r.at
			}
		}
		if start.IsZero() {
			time.Sleep(4 * poll)
		}
	}
	if start.IsZero() {
		n.violation(fmt.Sprintf("%s slot %s, after the faults: no run started within 20s", job, stamp(slot)))
		return
	}
	// A job that queues its slots (invoices: overlap queue) starts one once the run of the slot
	// before it has ended, which a late run after the faults may have pushed past this slot's
	// time: on time is then from that end.
	due := slot
	if s, err := n.d.trySnapshot(); err == nil {
		if prev, ok := s.slotRuns(job)[slot.Add(-nemesisEvery)]; ok && prev.Finished != nil && prev.Finished.After(due) {
			due = *prev.Finished
		}
	}
	if late := start.Sub(due); late > onTime {
		n.violation(fmt.Sprintf("%s slot %s, after the faults: started %d ms after it was due (%s), want within %v",
			job, stamp(slot), ms(late), stamp(due), onTime))
	}
	var r ledgerRow
	for time.Now().Before(deadline.Add(30 * time.Second)) {
		if s, err := n.d.trySnapshot(); err == nil {
			r = s.slotRuns(job)[slot]
			if r.Status != "" && r.Status != "running" {
				break
			}
		}
		time.Sleep(4 * poll)
	}
	if r.Status != "succeeded" {
		n.violation(fmt.Sprintf("%s slot %s, after the faults: %s (%s), want succeeded", job, stamp(slot), r.Status, r.Error))
	}
}

// settle pauses the jobs and waits until no run is in progress and the outbox is drained, so
// that the final check can ask for every e-mail.
func (n *nemesis) settle() {
	for _, job := range nemesisJobNames {
		n.d.cli("pause", job)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		snap, err := n.d.trySnapshot()
		if err == nil {
			var running []string
			for _, r := range snap.runs {
				if r.Status == "running" {
					running = append(running, fmt.Sprintf("%s %s", r.Job, stamp(r.Slot)))
				}
			}
			waiting, err := n.d.undelivered()
			if err == nil && len(running) == 0 && waiting == 0 {
				n.mark("jobs paused, no run in progress, the outbox drained")
				return
			}
			if time.Now().After(deadline) {
				n.violation(fmt.Sprintf("90s after the jobs were paused: runs in progress %v, %d messages undelivered", running, waiting))
				return
			}
		}
		time.Sleep(4 * poll)
	}
}

// gap is a stretch without a leader and the faults in force as it began.
type gap struct {
	interval
	causes []string
}

// leaderGaps returns the stretches between the nemesis's start and the leader found after it in
// which no term led, longest first. A term leads from its win to its end, less the time its
// replica was frozen; a replica's death ends its term.
func (n *nemesis) leaderGaps() []gap {
	end := n.leaderAt
	var leading []interval
	for _, tm := range n.terms() {
		to := tm.ended
		if to.IsZero() {
			to = end
		}
		var frozen []interval
		for _, iv := range n.down[tm.node] {
			if !iv.to.After(tm.won) {
				continue
			}
			if iv.dead {
				if iv.from.Before(to) {
					to = iv.from
				}
				break
			}
			frozen = append(frozen, iv)
		}
		from := tm.won
		for _, iv := range frozen {
			if iv.from.After(to) {
				break
			}
			if iv.from.After(from) {
				leading = append(leading, interval{from: from, to: iv.from})
			}
			from = iv.to
		}
		if to.After(from) {
			leading = append(leading, interval{from: from, to: to})
		}
	}
	sort.Slice(leading, func(i, j int) bool { return leading[i].from.Before(leading[j].from) })
	var gaps []gap
	cur := n.started
	for _, iv := range leading {
		if iv.from.After(cur) && cur.Before(end) {
			gaps = append(gaps, gap{interval: interval{from: cur, to: minTime(iv.from, end)}})
		}
		if iv.to.After(cur) {
			cur = iv.to
		}
	}
	if end.After(cur) {
		gaps = append(gaps, gap{interval: interval{from: cur, to: end}})
	}
	for i := range gaps {
		for _, f := range n.faults {
			to := f.to
			if to.IsZero() {
				to = n.stopped
			}
			if !f.from.After(gaps[i].from) && !to.Before(gaps[i].from.Add(-ttl)) {
				gaps[i].causes = append(gaps[i].causes, f.kind+": "+f.what)
			}
		}
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i].to.Sub(gaps[i].from) > gaps[j].to.Sub(gaps[j].from) })
	return gaps
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// delays returns how late the first run of each slot due while the faults went on started,
// sorted, and how many of those slots never started.
func (n *nemesis) delays(snap snapshot) (late []time.Duration, notRun int) {
	for _, job := range nemesisJobNames {
		first := map[time.Time]time.Time{}
		for _, r := range n.runStarts(job) {
			if at, ok := first[r.slot]; !ok || r.at.Before(at) {
				first[r.slot] = r.at
			}
		}
		for slot := range snap.slotRuns(job) {
			if slot.Before(n.started) || slot.After(n.stopped) {
				continue
			}
			if at, ok := first[slot]; ok {
				late = append(late, at.Sub(slot))
			} else {
				notRun++
			}
		}
	}
	slices.Sort(late)
	return late, notRun
}

// summary prints the run's figures: the faults by kind and per hour, the slots checked by
// status, the violations, the reruns, the longest stretch without a leader and its causes, and
// how late the slots due during the faults started.
func (n *nemesis) summary(snap snapshot, rep nemesisReport, emails int) {
	dur := n.stopped.Sub(n.started)
	byKind := map[string]int{}
	for _, f := range n.faults {
		byKind[f.kind]++
	}
	var kinds []string
	for k, c := range byKind {
		kinds = append(kinds, fmt.Sprintf("%s=%d (%.0f/h)", k, c, float64(c)/dur.Hours()))
	}
	sort.Strings(kinds)
	byStatus := map[string]int{}
	for _, r := range snap.runs {
		byStatus[r.Job+"/"+r.Status]++
	}
	var statuses []string
	for k, c := range byStatus {
		statuses = append(statuses, fmt.Sprintf("%s=%d", k, c))
	}
	sort.Strings(statuses)
	var reruns []string
	for _, r := range rep.reruns {
		reruns = append(reruns, fmt.Sprintf("%s%v", stamp(r.slot), r.tokens))
	}
	var unsuccessful []string
	for _, r := range snap.runs {
		if r.Status == "failed" || r.Status == "fenced" {
			unsuccessful = append(unsuccessful, fmt.Sprintf("%s %s %s attempt %d token %d: %.120s%s", r.Job, stamp(r.Slot), r.Status, r.Attempt, r.Token, r.Error, r.Reason))
		}
	}
	gaps := n.leaderGaps()
	late, notRun := n.delays(snap)
	var b strings.Builder
	fmt.Fprintf(&b, "nemesis summary %s, seed %d (replay: -nemesis.seed=%d -nemesis.backend=%s -nemesis.duration=%s):\n",
		n.backend, n.seed, n.seed, n.backend, dur.Round(time.Second))
	fmt.Fprintf(&b, "  faults: %d in %s, %.0f/h: %s; draws skipped %d\n", len(n.faults), dur.Round(time.Second), float64(len(n.faults))/dur.Hours(), strings.Join(kinds, " "), n.skipped)
	fmt.Fprintf(&b, "  slots checked: %d (%s)\n", rep.slots, strings.Join(statuses, " "))
	fmt.Fprintf(&b, "  violations: %d; replicas that refused to start (restarted as by their supervisor): %d\n", len(n.violations), n.startupExits)
	fmt.Fprintf(&b, "  exec slots executed under more than one term (the README's rerun): %d %v\n", len(rep.reruns), reruns)
	for _, u := range unsuccessful {
		fmt.Fprintf(&b, "  not succeeded: %s\n", u)
	}
	fmt.Fprintf(&b, "  e-mails: %d received for %d invoices, %d repeats\n", emails, len(snap.invoices), rep.duplicates)
	requests, refused := n.rc.requests(), 0
	for _, r := range requests {
		if r.Status == http.StatusConflict {
			refused++
		}
	}
	fmt.Fprintf(&b, "  receiver: %d requests, %d refused; %s slots sent under more than one term: %d; refusals judged alone: %d of %d; terms ended within a refusal: %d, each explained by another fault\n",
		len(requests), refused, hookJob, rep.untrusted.hookReruns, rep.untrusted.quietJudged, len(n.refusalWindows()), rep.untrusted.refusalEnds)
	fmt.Fprintf(&b, "  job role: %d attempts to poison a fence refused; %d fences held; %d terms won during a hold, %d of which started the held job within %v of its end; %d takeovers judged for the catch-up\n",
		n.poisonRefused, len(n.holds), rep.untrusted.takeovers, rep.untrusted.caughtUp, catchUpWithin, rep.untrusted.holdsJudged)
	if len(gaps) > 0 {
		g := gaps[0]
		fmt.Fprintf(&b, "  longest without a leader: %d ms from %s (%d stretches); in force: %s\n",
			ms(g.to.Sub(g.from)), stamp(g.from), len(gaps), strings.Join(g.causes, "; "))
	}
	fmt.Fprintf(&b, "  leader after the faults stopped: %d ms\n", ms(n.leaderAt.Sub(n.stopped)))
	fmt.Fprintf(&b, "  start delay of the %d slots due during the faults: p50 %d ms, p99 %d ms, max %d ms; %d never started (missed or skipped)",
		len(late), ms(pct(late, 50)), ms(pct(late, 99)), ms(pct(late, 100)), notRun)
	n.tl.print()
	n.t.Log(b.String())
}
