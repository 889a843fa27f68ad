package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The scenarios below are about parties the scheduler does not trust: a job's database role and
// a webhook receiver. Neither may stop the other jobs or end the leader's term.

// outsideFence is the token a job role once raised a fence to: far above any etcd revision.
const outsideFence = int64(9000000000000)

// otherJob is the second job of the untrusted-party scenarios, beside the invoices workload.
const otherJob = "report"

// jobRoleRaisesFence gives a database role the rights the README's job-role recipe used to
// grant (USAGE on the schema, EXECUTE on fence_check), and has it raise the fence of one job far
// above the leader's token. That job is blocked; the invoices job keeps running in the same term
// with no slot missed; once the table owner resets the fence the blocked job runs again.
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raiseAt := time.Now()
	if err := adminExec(ctx, role, fmt.Sprintf("SELECT scheduler.fence_check('%s', %d)", otherJob, outsideFence)); err != nil {
		t.Fatalf("the job role raises %s's fence: %v", otherJob, err)
	}
	tl.start(raiseAt, fmt.Sprintf("a job role raises the fence of %s to %d; the leader %s holds token %d", otherJob, outsideFence, lead.node, lead.token))
	watched := raiseAt.Add(w.every).Truncate(w.every).Add(w.every)
	sleepUntil(watched.Add(5 * w.every))
	last := watched.Add(4 * w.every)
	d.waitFinished(invoicesJob, last, 30*time.Second)
	snap := d.snapshot()
	runs := snap.slotRuns(invoicesJob)
	for at := watched; !at.After(last); at = at.Add(w.every) {
		r, ok := runs[at.UTC()]
		switch {
		case !ok:
			t.Errorf("slot %s of %s has no run while %s was blocked", stamp(at), invoicesJob, otherJob)
		case r.Status != "succeeded" || r.Token != lead.token:
			t.Errorf("slot %s of %s: %s with token %d (%s), want succeeded with the term's token %d",
				stamp(at), invoicesJob, r.Status, r.Token, r.Reason, lead.token)
		}
	}
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
			t.Errorf("term %d of %s (%s): the term must not change when a job role raises one job's fence", tm.token, tm.node, tm.reason)
		}
	}

	resetAt := time.Now()
	if err := adminExec(ctx, d.dsn, fmt.Sprintf("SELECT scheduler.fence_admin_reset('%s')", otherJob)); err != nil {
		t.Fatalf("fence_admin_reset: %v", err)
	}
	tl.mark(resetAt, "the table owner resets the fence of %s", otherJob)
	d.waitFor(otherJob+" running again", 30*time.Second, func() bool {
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
	// write committed under; the job role's raise was no term, so it is left out, and so are the
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

// jobRoleDSN creates a role with the old recipe's rights in the scenario's database and returns
// a DSN logged in as it.
func jobRoleDSN(t *testing.T, d *deployment) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	role := fmt.Sprintf("e2e_job_role_%d", time.Now().UnixNano())
	for _, sql := range []string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD 'job-secret'", role),
		fmt.Sprintf("GRANT USAGE ON SCHEMA scheduler TO %s", role),
		fmt.Sprintf("GRANT EXECUTE ON FUNCTION scheduler.fence_check(text, bigint) TO %s", role),
	} {
		if err := adminExec(ctx, d.dsn, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = adminExec(ctx, d.dsn, "DROP OWNED BY "+pgx.Identifier{role}.Sanitize())
		_ = adminExec(ctx, d.dsn, "DROP ROLE "+pgx.Identifier{role}.Sanitize())
	})
	u, err := url.Parse(d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "job-secret")
	return u.String()
}

// receiverRefuses runs an http job whose receiver answers 409 Conflict to every request while
// the invoices job runs on the same leader. Each refused run ends fenced ("receiver refused the
// token") at its first attempt; the invoices run is not cancelled and run again elsewhere: it
// finishes once, at attempt 1, in the same term.
func (s *suite) receiverRefuses(t *testing.T) {
	var (
		mu   sync.Mutex
		sent = map[string]int{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		http.Error(rw, "a newer token was seen", http.StatusConflict)
	}))
	defer srv.Close()
	w := seedWorkload
	d := s.deploy(t, deployOptions{jobs: w.yaml() + fmt.Sprintf(`  - name: %s
    schedule: "@every 1s"
    type: http
    url: %s
    retries: 2
    retry_backoff: 100ms
`, otherJob, srv.URL)})
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
	mu.Lock()
	for key, n := range sent {
		if n != 1 {
			t.Errorf("run %s was sent %d times, want once: a refused run is not retried", key, n)
		}
	}
	mu.Unlock()
	tl.print()
	d.check(invoicesJob, w.clients)
}
