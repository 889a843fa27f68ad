package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/fence"
	"scheduler/internal/status"
	"scheduler/internal/testenv"
)

// outsideFence is what a job's role once raised a fence to: far above any token etcd hands out.
const outsideFence = int64(9000000000000)

const blockJobs = `
jobs:
  - name: x
    schedule: "* * * * * *"
    type: exec
    command: ["true"]
    misfire: skip
  - name: y
    schedule: "* * * * * *"
    type: exec
    command: ["true"]
    misfire: skip
`

// waitXY waits until blockJobs' jobs x and y have each succeeded n times.
func (c *cluster) waitXY(n int) {
	c.t.Helper()
	c.wait(fmt.Sprintf("x and y to succeed %d times", n), func() bool {
		return countStatus(c.history("x"), scheduler.StatusSucceeded) >= n && countStatus(c.history("y"), scheduler.StatusSucceeded) >= n
	})
}

// newBareCluster is newCluster with only the given jobs.
func newBareCluster(t *testing.T, dsn, jobs string) *cluster {
	t.Helper()
	c := &cluster{t: t, etcd: testenv.MustEtcd(t), dsn: dsn, replicas: map[string]*replica{}}
	c.path = filepath.Join(t.TempDir(), "scheduler.yaml")
	c.writeConfig(jobs)
	if code, out, errOut := runCLI(t, "migrate", "--config", c.path); code != 0 {
		t.Fatalf("migrate: %d %s %s", code, out, errOut)
	}
	return c
}

// fenceAdmin raises and resets job fences from outside the scheduler, as a database user would.
type fenceAdmin struct {
	raise func(ctx context.Context, job string, token int64) error
	reset func(ctx context.Context, job string) error
}

// pgAdmin runs the fence functions on Postgres as the user of dsn.
func pgAdmin(t *testing.T, dsn string) fenceAdmin {
	exec := func(ctx context.Context, sql string, args ...any) error {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql, args...)
		return err
	}
	return fenceAdmin{
		raise: func(ctx context.Context, job string, token int64) error {
			return exec(ctx, "SELECT scheduler.fence_check($1, $2)", job, token)
		},
		reset: func(ctx context.Context, job string) error {
			return exec(ctx, "SELECT scheduler.fence_admin_reset($1)", job)
		},
	}
}

// jobRoleDSN creates a role as the old README recipe did (USAGE on the schema, EXECUTE on
// fence_check) and returns dsn logged in as it.
func jobRoleDSN(ctx context.Context, t *testing.T, dsn string) string {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	role := fmt.Sprintf("job_role_%d", time.Now().UnixNano())
	for _, sql := range []string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD 'job-secret'", role),
		fmt.Sprintf("GRANT USAGE ON SCHEMA scheduler TO %s", role),
		fmt.Sprintf("GRANT EXECUTE ON FUNCTION scheduler.fence_check(text, bigint) TO %s", role),
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, "DROP OWNED BY "+role)
			_, _ = conn.Exec(ctx, "DROP ROLE "+role)
			_ = conn.Close(ctx)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "job-secret")
	return u.String()
}

// sqliteAdmin changes the fences of the store's SQLite file, as its owner would.
func sqliteAdmin(t *testing.T, c *cluster) fenceAdmin {
	cfg, err := config.Load(c.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	open := func(ctx context.Context) (*fence.Store, error) {
		return fence.Open(ctx, fence.Config{Path: sqlitePath(cfg)}, zaptest.NewLogger(t))
	}
	return fenceAdmin{
		raise: func(ctx context.Context, job string, token int64) error {
			s, err := open(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			return s.RaiseAll(ctx, []string{job}, token)
		},
		reset: func(ctx context.Context, job string) error {
			s, err := open(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			return s.ResetFence(ctx, job)
		},
	}
}

func (c *cluster) leaderAddr(doc status.Doc) string {
	for _, r := range doc.Replicas {
		if doc.Leader != nil && r.Node == doc.Leader.Node {
			return "http://" + r.HTTPAddr
		}
	}
	c.t.Fatalf("no replica entry for the leader in %+v", doc)
	return ""
}

func jobOf(doc status.Doc, name string) status.Job {
	for _, j := range doc.Jobs {
		if j.Name == name {
			return j
		}
	}
	return status.Job{}
}

// TestDaemon_FenceRaisedFromOutside: a fence raised above the leader's token from outside the
// scheduler blocks that job alone: status, gauge and /readyz say so, the other job keeps running
// in the same term, and once the table owner resets the fence the job runs again by itself, and a
// trigger sent while it was blocked runs, in the same term.
func TestDaemon_FenceRaisedFromOutside(t *testing.T) {
	cases := map[string]func(ctx context.Context, t *testing.T) (*cluster, fenceAdmin){
		"PostgresOwner": func(_ context.Context, t *testing.T) (*cluster, fenceAdmin) {
			dsn := testenv.MustDatabase(t)
			return newBareCluster(t, dsn, blockJobs), pgAdmin(t, dsn)
		},
		"PostgresJobRole": func(ctx context.Context, t *testing.T) (*cluster, fenceAdmin) {
			dsn := testenv.MustDatabase(t)
			c := newBareCluster(t, dsn, blockJobs)
			owner := pgAdmin(t, dsn)
			role := pgAdmin(t, jobRoleDSN(ctx, t, dsn))
			return c, fenceAdmin{raise: role.raise, reset: owner.reset}
		},
		"SQLite": func(_ context.Context, t *testing.T) (*cluster, fenceAdmin) {
			c := newBareCluster(t, "", blockJobs)
			return c, sqliteAdmin(t, c)
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c, admin := setup(ctx, t)
			c.start("a")
			c.waitXY(2)
			doc := c.status()
			term := doc.Leader.Token
			addr := c.leaderAddr(doc)

			if err := admin.raise(ctx, "x", outsideFence); err != nil {
				t.Fatalf("raise x's fence from outside: %v", err)
			}
			c.wait("x blocked in status", func() bool { return jobOf(c.status(), "x").Blocked != nil })
			blockedAt := time.Now()
			doc = c.status()
			if b := jobOf(doc, "x").Blocked; b.Fence != outsideFence || b.Token != term || !strings.Contains(b.Reason, "fence_admin_reset('x')") {
				t.Fatalf("x blocked=%+v, want fence %d, token %d and the remedy", b, outsideFence, term)
			}
			if jobOf(doc, "y").Blocked != nil || doc.Leader == nil || doc.Leader.Token != term {
				t.Fatalf("status %+v: want y not blocked and the leader's token still %d", doc, term)
			}
			if out := c.cli("status"); !strings.Contains(out, "blocked (fence") || !strings.Contains(out, "--bump-revision") {
				t.Fatalf("status does not show x blocked with its remedy:\n%s", out)
			}
			c.wait("the leader to report x blocked", func() bool {
				code, body := httpGet(t, addr+"/readyz")
				_, metrics := httpGet(t, addr+"/metrics")
				return code == http.StatusServiceUnavailable && strings.Contains(body, `job "x" is blocked`) &&
					strings.Contains(body, "revoke the raising functions") &&
					strings.Contains(metrics, `scheduler_job_blocked{job="x"} 1`) && strings.Contains(metrics, `scheduler_job_blocked{job="y"} 0`)
			})
			if code, body := httpGet(t, addr+"/status"); code != 200 || !strings.Contains(body, `"blocked": {`) {
				t.Fatalf("/status = %d, want x blocked in it:\n%.800s", code, body)
			}

			// y goes on in the same term.
			c.wait("y running while x is blocked", func() bool {
				n := 0
				for _, r := range c.history("y") {
					if r.Status == scheduler.StatusSucceeded && r.ScheduledAt.After(blockedAt) {
						n++
					}
				}
				return n >= 3
			})
			for _, r := range c.history("y") {
				if r.Token != term || r.Status == scheduler.StatusMissed {
					t.Fatalf("y run %+v: want token %d and no missed slot", r, term)
				}
			}
			// etcd confirms the term: no line may blame a newer leader alone.
			if logs := c.replicas["a"].logs.String(); strings.Contains(logs, "fenced out by a newer leader") ||
				strings.Contains(logs, "a newer leader owns the job\"") {
				t.Fatalf("the leader's logs blame a newer leader for a fence raised from outside:\n%s", logs)
			}

			// A trigger of x while it is blocked is kept, and runs in this term once x is free.
			c.cli("trigger", "x")
			c.wait("the leader to keep the trigger of blocked x", func() bool {
				return strings.Contains(c.replicas["a"].logs.String(), "trigger kept until its job can run")
			})

			if err := admin.reset(ctx, "x"); err != nil {
				t.Fatalf("fence_admin_reset('x'): %v", err)
			}
			resetAt := time.Now()
			// Its run is the manual slot's, recorded in this term: succeeded, or skipped when x's
			// scheduled run of that second was still running (overlap: skip).
			c.wait("the kept trigger of x run in the same term", func() bool {
				for _, r := range c.history("x") {
					if r.Manual && r.FinishedAt != nil {
						return r.Token == term && (r.Status == scheduler.StatusSucceeded || r.Status == scheduler.StatusSkipped)
					}
				}
				return false
			})
			c.wait("x running again", func() bool {
				for _, r := range c.history("x") {
					if r.Status == scheduler.StatusSucceeded && r.ScheduledAt.After(resetAt) {
						return true
					}
				}
				return false
			})
			c.wait("x no longer blocked", func() bool {
				code, _ := httpGet(t, addr+"/readyz")
				_, metrics := httpGet(t, addr+"/metrics")
				return code == 200 && jobOf(c.status(), "x").Blocked == nil && strings.Contains(metrics, `scheduler_job_blocked{job="x"} 0`)
			})
			if doc := c.status(); doc.Leader == nil || doc.Leader.Token != term {
				t.Fatalf("leader %+v after the reset, want the same term %d", doc.Leader, term)
			}
			for _, r := range c.history("x") {
				if r.Token != term {
					t.Fatalf("x run %+v: want token %d", r, term)
				}
			}
		})
	}
}

// TestDaemon_ReceiverRefusalKeepsTheTerm: an http job's receiver answering 409 ends that run,
// recorded fenced and not retried; a long exec job running on the same leader finishes once, in
// the same term.
func TestDaemon_ReceiverRefusalKeepsTheTerm(t *testing.T) {
	recv := testenv.MustReceiver(t, http.StatusConflict, "newer token seen")
	side := filepath.Join(t.TempDir(), "side-effects")
	c := newBareCluster(t, testenv.MustDatabase(t), fmt.Sprintf(`
jobs:
  - name: long
    schedule: "@yearly"
    type: exec
    command: [sh, -c, 'echo "attempt=$SCHEDULER_ATTEMPT" >> %s; sleep 4']
  - name: hook
    schedule: "* * * * * *"
    type: http
    url: %s
    retries: 2
    retry_backoff: 100ms
    misfire: skip
`, side, recv.URL))
	c.start("a")
	c.wait("a leader", func() bool { return c.status().Leader != nil })
	term := c.status().Leader.Token
	c.cli("trigger", "long")
	c.wait("the long run to finish", func() bool { return countStatus(c.history("long"), scheduler.StatusSucceeded) == 1 })

	b, err := os.ReadFile(side)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 1 || lines[0] != "attempt=1" {
		t.Fatalf("side effects %q, want one line from attempt 1", b)
	}
	runs := c.history("long")
	if len(runs) != 1 || runs[0].Attempt != 1 || runs[0].Token != term {
		t.Fatalf("long runs %+v, want one at attempt 1 with token %d", runs, term)
	}
	hooks := c.history("hook")
	fenced := 0
	for _, r := range hooks {
		switch {
		case r.Status == scheduler.StatusRunning:
		case r.Status != scheduler.StatusFenced || r.Reason != "receiver refused the token" || r.Attempt != 1 || r.Token != term:
			t.Fatalf("hook run %+v, want fenced, reason %q, attempt 1, token %d", r, "receiver refused the token", term)
		default:
			fenced++
		}
	}
	if fenced < 3 {
		t.Fatalf("%d hook runs fenced while the long job ran, want at least 3: %+v", fenced, hooks)
	}
	for k, n := range recv.Keys() {
		if n != 1 {
			t.Errorf("run %s was sent %d times, want 1: a refused run is not retried", k, n)
		}
	}
	if doc := c.status(); doc.Leader == nil || doc.Leader.Token != term {
		t.Fatalf("leader %+v, want the same term %d", doc.Leader, term)
	}
}

// TestDaemon_FenceHeldAtTakeover: a transaction that entered job x's fence with the old term's
// token (fence_verify, as a job's database role does) and stays open holds up the next leader's
// raise of x alone: the new term blocks x, saying why, runs y, and runs x once the transaction
// ends. Before, the raise of every fence timed out and ended each new term: no job ran.
func TestDaemon_FenceHeldAtTakeover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dsn := testenv.MustDatabase(t)
	c := newBareCluster(t, dsn, blockJobs)
	a := c.start("a")
	c.waitXY(1)
	old := c.status().Leader.Token

	conn := testenv.Connect(ctx, t, dsn)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // committed below unless the test failed
	if _, err := tx.Exec(ctx, "SELECT scheduler.fence_verify('x', $1)", old); err != nil {
		t.Fatalf("fence_verify('x', %d): %v", old, err)
	}
	if err := a.stop(t); err != nil {
		t.Fatalf("stop a: %v", err)
	}
	b := c.start("b")
	var term int64
	c.wait("a new term", func() bool {
		doc := c.status()
		if doc.Leader != nil && doc.Leader.Token > old {
			term = doc.Leader.Token
		}
		return term > 0
	})
	ranY := func() bool {
		for _, r := range c.history("y") {
			if r.Token == term && r.Status == scheduler.StatusSucceeded {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(45 * time.Second)
	for !ranY() {
		if time.Now().After(deadline) {
			t.Fatalf("y never ran under the new term %d while x's fence was held; logs:\n%s", term, b.logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if doc := c.status(); doc.Leader == nil || doc.Leader.Token != term {
		t.Fatalf("leader %+v, want the term %d to go on", doc.Leader, term)
	}
	addr := c.leaderAddr(c.status())
	c.wait("the leader to report x held", func() bool {
		code, body := httpGet(t, addr+"/readyz")
		_, metrics := httpGet(t, addr+"/metrics")
		return code == http.StatusServiceUnavailable && strings.Contains(body, `job "x" is blocked`) &&
			strings.Contains(body, "still open") && strings.Contains(metrics, `scheduler_job_blocked{job="x"} 1`) &&
			strings.Contains(metrics, `scheduler_job_blocked{job="y"} 0`)
	})
	for _, r := range c.history("x") {
		if r.Token == term {
			t.Fatalf("x run %+v under token %d while its fence was held", r, term)
		}
	}
	for deadline := time.Now().Add(status.HeldAfter + 15*time.Second); ; time.Sleep(500 * time.Millisecond) {
		doc := c.status()
		if bl := jobOf(doc, "x").Blocked; bl != nil {
			if !bl.Held || bl.Token != term || !strings.Contains(bl.Reason, "pg_locks") || jobOf(doc, "y").Blocked != nil {
				t.Fatalf("status: x blocked=%+v y blocked=%+v, want x held below token %d and y not blocked", bl, jobOf(doc, "y").Blocked, term)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed x held: %+v", jobOf(doc, "x"))
		}
	}
	if out := c.cli("status"); !strings.Contains(out, "held below token") {
		t.Fatalf("status does not show x held:\n%s", out)
	}

	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c.wait("x running under the new term", func() bool {
		for _, r := range c.history("x") {
			if r.Token == term && r.Status == scheduler.StatusSucceeded {
				return true
			}
		}
		return false
	})
	c.wait("x no longer blocked", func() bool {
		code, _ := httpGet(t, addr+"/readyz")
		return code == http.StatusOK
	})
	// Once free, x is taken over like the others: its slots while it was held are caught up
	// (misfire skip: recorded missed by the new term).
	missed := 0
	for _, r := range c.history("x") {
		if r.Token == term && r.Status == scheduler.StatusMissed {
			missed++
		}
	}
	if missed == 0 {
		t.Fatalf("x's slots while it was held were not caught up: %+v", c.history("x"))
	}
	if doc := c.status(); doc.Leader == nil || doc.Leader.Token != term {
		t.Fatalf("leader %+v, want the same term %d", doc.Leader, term)
	}
}
