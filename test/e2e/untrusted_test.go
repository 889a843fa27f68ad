package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"scheduler/internal/testenv"
)

// The scenarios below are about parties the scheduler does not trust: a job's database role and
// a webhook receiver. Neither may stop the other jobs or end the leader's term.

// outsideFence is the token of a raise from outside the scheduler: far above any etcd revision.
const outsideFence = int64(9000000000000)

// otherJob is the second job of the untrusted-party scenarios, beside the invoices workload.
const otherJob = "report"

// unknownJob is a job name that is in no job table and has no fence.
const unknownJob = "not-a-job"

// jobRoleRaisesFence first has a job's database role, set up as the README's recipe says
// (USAGE on the schema, EXECUTE on fence_verify alone), try to raise and forge fences: the
// raising functions and writes to job_fence are refused (42501), fence_verify with a token
// that is not the fence, or for a job that has none, fails with JF001, the fence table is
// unchanged and every job keeps running in the same term with no slot missed. Then the table
// owner raises the fence of one job far above the leader's token, standing in for a raise from
// outside the scheduler or etcd revisions gone back: that job is blocked; the invoices job
// keeps running in the same term with no slot missed; once the owner resets the fence the
// blocked job runs again.
func (s *suite) jobRoleRaisesFence(t *testing.T) {
	w := workload{schedule: "@every 2s", every: 2 * time.Second, clients: 3, delay: 100 * time.Millisecond}
	d := s.deploy(t, deployOptions{jobs: w.yaml() + fmt.Sprintf(`  - name: %s
    schedule: "@every 1s"
    type: exec
    command: ["true"]
`, otherJob)})
	d.startAll()
	lead := d.waitLeader(0, 30*time.Second)
	first := d.waitRunStarted(invoicesJob, time.Now(), 30*time.Second)
	d.waitFinished(invoicesJob, first.slot, 30*time.Second)
	role := jobRoleDSN(t, d)
	tl := newTimeline(t, "JobRoleRaisesFence")

	before := fenceRows(t, d)
	if _, ok := before[otherJob]; !ok {
		t.Fatalf("%s has no fence row while the leader runs it: %v", otherJob, before)
	}
	triedAt := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, a := range []struct{ sql, code, refused string }{
		{fmt.Sprintf("SELECT scheduler.fence_check('%s', %d)", otherJob, outsideFence), "42501", "function fence_check"},
		{fmt.Sprintf("SELECT scheduler.fence_check_all(ARRAY['%s'], %d)", otherJob, outsideFence), "42501", "function fence_check_all"},
		{fmt.Sprintf("SELECT scheduler.fence_raise(ARRAY['%s'], %d)", otherJob, outsideFence), "42501", "function fence_raise"},
		{fmt.Sprintf("SELECT scheduler.fence_verify('%s', %d)", otherJob, outsideFence), "JF001", ""},
		{fmt.Sprintf("SELECT scheduler.fence_verify('%s', %d)", unknownJob, lead.token), "JF001", ""},
		{fmt.Sprintf("INSERT INTO scheduler.job_fence (job, token) VALUES ('%s', %d)", unknownJob, outsideFence), "42501", "table job_fence"},
		{fmt.Sprintf("UPDATE scheduler.job_fence SET token = %d WHERE job = '%s'", outsideFence, otherJob), "42501", "table job_fence"},
	} {
		err := adminExec(ctx, role, a.sql)
		if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) || pe.Code != a.code || !strings.Contains(pe.Message, a.refused) {
			t.Errorf("as the job role, %s: %v, want SQLSTATE %s %s", a.sql, err, a.code, a.refused)
		}
	}
	tl.start(triedAt, fmt.Sprintf("a job role tries to raise and forge fences; the leader %s holds token %d", lead.node, lead.token))
	watched := triedAt.Add(w.every).Truncate(w.every).Add(w.every)
	last := watched.Add(3 * w.every)
	sleepUntil(last.Add(w.every))
	d.waitFinished(invoicesJob, last, 30*time.Second)
	d.waitFinished(otherJob, last, 30*time.Second)
	if after := fenceRows(t, d); !maps.Equal(after, before) {
		t.Errorf("the fence table changed while only the job role acted on it:\nbefore %v\nafter  %v", before, after)
	}
	snap := d.snapshot()
	wantSucceeded(t, snap, invoicesJob, watched, last, w.every, lead.token)
	wantSucceeded(t, snap, otherJob, watched, last, time.Second, lead.token)
	for _, r := range snap.runs {
		if r.Status == "missed" {
			t.Errorf("slot %s of %s recorded missed: a job role's attempts must stop no job", stamp(r.Slot), r.Job)
		}
	}
	tl.mark(last, "every job ran each slot up to %s in the same term", stamp(last))

	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raiseAt := time.Now()
	if err := adminExec(ctx, d.dsn, fmt.Sprintf("SELECT scheduler.fence_check('%s', %d)", otherJob, outsideFence)); err != nil {
		t.Fatalf("the table owner raises %s's fence: %v", otherJob, err)
	}
	tl.mark(raiseAt, "the table owner raises the fence of %s to %d", otherJob, outsideFence)
	watched = raiseAt.Add(w.every).Truncate(w.every).Add(w.every)
	sleepUntil(watched.Add(5 * w.every))
	last = watched.Add(4 * w.every)
	d.waitFinished(invoicesJob, last, 30*time.Second)
	snap = d.snapshot()
	wantSucceeded(t, snap, invoicesJob, watched, last, w.every, lead.token)
	blockedRuns := 0
	for _, r := range snap.runs {
		if r.Job == invoicesJob && r.Status == "missed" {
			t.Errorf("slot %s of %s recorded missed: a fence on %s must not stop it", stamp(r.Slot), invoicesJob, otherJob)
		}
		if r.Job == otherJob && r.Slot.After(raiseAt.Add(time.Second)) {
			blockedRuns++
		}
	}
	tl.figure("blocked_job_runs_while_blocked", blockedRuns)
	if blockedRuns != 0 {
		t.Errorf("%s has %d runs after its fence was raised above the token, want none while blocked", otherJob, blockedRuns)
	}
	for _, tm := range d.terms() {
		if tm.token != lead.token {
			t.Errorf("term %d of %s (%s): the term must not change when a job role acts or one job's fence is raised", tm.token, tm.node, tm.reason)
		}
	}

	resetAt := time.Now()
	if err := adminExec(ctx, d.dsn, fmt.Sprintf("SELECT scheduler.fence_admin_reset('%s')", otherJob)); err != nil {
		t.Fatalf("fence_admin_reset: %v", err)
	}
	tl.mark(resetAt, "the table owner resets the fence of %s", otherJob)
	testenv.Eventually(d.t, 30*time.Second, poll, otherJob+" running again", func() bool {
		for _, r := range d.snapshot().runs {
			if r.Job == otherJob && r.Slot.After(resetAt) && r.Status == "succeeded" && r.Token == lead.token {
				tl.mark(*r.Finished, "%s runs again, token %d", otherJob, r.Token)
				return true
			}
		}
		return false
	})
	tl.print()
	// The invariants read every raise as a term, and the highest fence of any job as the fence a
	// write committed under; the owner's raise was no term, so it is left out, and so are the
	// leader's own writes that the audit saw under that foreign fence. A stale write of any
	// other replica is still found.
	for _, n := range nodes {
		if r := d.replicas[n]; r.proc != nil {
			r.proc.kill()
		}
	}
	snap = d.snapshot()
	snap.raises = slices.DeleteFunc(snap.raises, func(r raise) bool { return r.Token == outsideFence })
	snap.writes = slices.DeleteFunc(snap.writes, func(w write) bool {
		return w.Fence != nil && *w.Fence == outsideFence && w.Writer == "e2e-"+lead.node
	})
	for _, v := range invariants(snap, invoicesJob, w.clients) {
		t.Error(v)
	}
}

// wantSucceeded fails t for each slot of job from first to last, every apart, that has no run
// or a run that did not succeed with token.
func wantSucceeded(t *testing.T, s snapshot, job string, first, last time.Time, every time.Duration, token int64) {
	t.Helper()
	runs := s.slotRuns(job)
	for at := first; !at.After(last); at = at.Add(every) {
		r, ok := runs[at.UTC()]
		switch {
		case !ok:
			t.Errorf("slot %s of %s has no run", stamp(at), job)
		case r.Status != "succeeded" || r.Token != token:
			t.Errorf("slot %s of %s: %s with token %d (%s), want succeeded with the term's token %d",
				stamp(at), job, r.Status, r.Token, r.Reason, token)
		}
	}
}

// receiverRefuses runs an http job whose receiver answers 409 Conflict to every request while
// the invoices job runs on the same leader. Each refused run ends fenced ("receiver refused the
// token") at its first attempt; the invoices run is not cancelled and run again elsewhere: it
// finishes once, at attempt 1, in the same term.
func (s *suite) receiverRefuses(t *testing.T) {
	recv := testenv.MustReceiver(t, http.StatusConflict, "a newer token was seen")
	w := seedWorkload
	d := s.deploy(t, deployOptions{jobs: w.yaml() + fmt.Sprintf(`  - name: %s
    schedule: "@every 1s"
    type: http
    url: %s
    retries: 2
    retry_backoff: 100ms
`, otherJob, recv.URL)})
	d.startAll()
	lead := d.waitLeader(0, 30*time.Second)
	run := d.waitRunStarted(invoicesJob, time.Now(), 30*time.Second)
	tl := newTimeline(t, "ReceiverRefusesToken")
	tl.start(run.at, fmt.Sprintf("%s starts slot %s on %s, token %d, while %s's receiver answers 409 to every request",
		invoicesJob, stamp(run.slot), run.node, run.token, otherJob))
	fin := d.waitFinished(invoicesJob, run.slot, 30*time.Second)
	tl.mark(*fin.Finished, "slot %s %s, attempt %d, token %d", stamp(run.slot), fin.Status, fin.Attempt, fin.Token)
	snap := d.snapshot()
	if fin.Status != "succeeded" || fin.Attempt != 1 || fin.Token != lead.token {
		t.Errorf("slot %s: %s at attempt %d with token %d, want succeeded at attempt 1 with the term's token %d",
			stamp(run.slot), fin.Status, fin.Attempt, fin.Token, lead.token)
	}
	for _, i := range snap.invoicesOf(run.slot) {
		if i.Token != lead.token {
			t.Errorf("invoice of client %d for slot %s has token %d, want %d: the run must not be repeated", i.Client, stamp(run.slot), i.Token, lead.token)
		}
	}
	refused := 0
	for _, r := range snap.runs {
		if r.Job != otherJob || r.Status == "running" {
			continue
		}
		if r.Status != "fenced" || r.Reason != "receiver refused the token" || r.Attempt != 1 || r.Token != lead.token {
			t.Errorf("%s slot %s: %s (%s) at attempt %d with token %d, want fenced (receiver refused the token) at attempt 1 with token %d",
				otherJob, stamp(r.Slot), r.Status, r.Reason, r.Attempt, r.Token, lead.token)
			continue
		}
		refused++
	}
	tl.figure("refused_runs", refused)
	if refused < 3 {
		t.Errorf("%d runs of %s refused by the receiver, want at least 3 while %s ran", refused, otherJob, invoicesJob)
	}
	for _, tm := range d.terms() {
		if tm.token != lead.token {
			t.Errorf("term %d of %s (%s): a receiver's 409 must not end the leader's term", tm.token, tm.node, tm.reason)
		}
	}
	for key, n := range recv.Keys() {
		if n != 1 {
			t.Errorf("run %s was sent %d times, want once: a refused run is not retried", key, n)
		}
	}
	tl.print()
	d.check(invoicesJob, w.clients)
}
