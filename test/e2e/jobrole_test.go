package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The roles below are the README's: a job's own database role ("A job's own database role")
// and the recommended setup of sql jobs ("sql jobs' rights"). Roles belong to the Postgres
// server, not to the scenario's database, so their names are made unique.

// rolePassword is the password of the login roles the scenarios create.
const rolePassword = "job-secret"

// roleName returns a role name starting with prefix that no other scenario uses.
func roleName(prefix string) string { return fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano()) }

// mustRole runs setup in the scenario's database as the table owner, each statement with {role}
// replaced by role's quoted name; the first statement creates the role. In t.Cleanup the role's
// objects and grants are dropped, and then the role.
func mustRole(t *testing.T, d *deployment, role string, setup ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quoted := pgx.Identifier{role}.Sanitize()
	for i, sql := range setup {
		sql = strings.ReplaceAll(sql, "{role}", quoted)
		if err := adminExec(ctx, d.dsn, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if i == 0 {
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = adminExec(ctx, d.dsn, "DROP OWNED BY "+quoted)
				_ = adminExec(ctx, d.dsn, "DROP ROLE "+quoted)
			})
		}
	}
}

// roleDSN returns the scenario's DSN logged in as the login role role.
func roleDSN(t *testing.T, d *deployment, role string) string {
	t.Helper()
	u, err := url.Parse(d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, rolePassword)
	return u.String()
}

// jobRoleDSN creates a job's own database role as the README's recipe does (LOGIN, USAGE on the
// scheduler's schema, EXECUTE on the check-only fence_verify and nothing else) and returns a
// DSN logged in as it.
func jobRoleDSN(t *testing.T, d *deployment) string {
	t.Helper()
	role := roleName("e2e_nightly_job")
	mustRole(t, d, role,
		"CREATE ROLE {role} LOGIN PASSWORD '"+rolePassword+"'",
		"GRANT USAGE ON SCHEMA scheduler TO {role}",
		"GRANT EXECUTE ON FUNCTION scheduler.fence_verify(text, bigint) TO {role}")
	return roleDSN(t, d, role)
}

// fenceRow is a row of scheduler.job_fence, but for its key.
type fenceRow struct {
	Token    int64
	RaisedAt time.Time
}

// fenceRows reads the fence table as its owner, by job.
func fenceRows(t *testing.T, d *deployment) map[string]fenceRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := d.db.Query(ctx, `SELECT job, token, raised_at FROM scheduler.job_fence`)
	if err != nil {
		t.Fatalf("read the fence table: %v", err)
	}
	out := map[string]fenceRow{}
	var (
		job string
		row fenceRow
	)
	if _, err := pgx.ForEachRow(rows, []any{&job, &row.Token, &row.RaisedAt}, func() error {
		out[job] = row
		return nil
	}); err != nil {
		t.Fatalf("read the fence table: %v", err)
	}
	return out
}

// The jobs of sqlJobRole: one writing the table granted to its role, two trying to write the
// fence table, as their own role and after RESET ROLE (as the login role of store.job_dsn).
const (
	ingestJob    = "ingest"
	tamperJob    = "tamper"
	tamperAsJobs = "tamper-reset-role"
)

// refusedFor is what Postgres refuses each tampering job: its own role has no USAGE on the
// scheduler's schema, the login role has it but no right on the fence table.
var refusedFor = map[string]string{
	tamperJob:    "permission denied for schema scheduler (SQLSTATE 42501)",
	tamperAsJobs: "permission denied for table job_fence (SQLSTATE 42501)",
}

// ingestedSQL is the table ingestJob writes. A trigger of the table's owner stamps each row with
// the job's fence when the row is written: the run entered the fence with fence_verify, which
// holds it until the commit, so that is the run's token.
const ingestedSQL = `
CREATE TABLE public.ingested (
    written_as text NOT NULL DEFAULT current_user,
    session_as text NOT NULL DEFAULT session_user,
    fence      bigint);
CREATE FUNCTION public.ingested_fence() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    NEW.fence := (SELECT f.token FROM scheduler.job_fence AS f WHERE f.job = 'ingest');
    RETURN NEW;
END $$;
CREATE TRIGGER ingested_fence BEFORE INSERT ON public.ingested FOR EACH ROW EXECUTE FUNCTION public.ingested_fence();
`

// sqlJobRole runs sql jobs under the README's recommended setup: store.job_dsn logs in as a
// NOINHERIT role holding only USAGE on the scheduler's schema and fence_verify, and each job
// runs under a NOLOGIN role of its own granted to it. The jobs whose SQL sets every fence to 1,
// as their role or after RESET ROLE, fail every run and the fence table is unchanged; the job
// inserting into the table granted to its role succeeds, and each row it wrote carries the
// term's token and the job's role. The term does not change.
func (s *suite) sqlJobRole(t *testing.T) {
	login, ingestRole, tamperRole := roleName("e2e_scheduler_jobs"), roleName("e2e_ingest_job"), roleName("e2e_tamper_job")
	jobs := fmt.Sprintf(`  - name: %s
    schedule: "@every 1s"
    type: sql
    role: %s
    sql: "INSERT INTO public.ingested DEFAULT VALUES"
  - name: %s
    schedule: "@every 1s"
    type: sql
    role: %s
    sql: "UPDATE scheduler.job_fence SET token = 1"
  - name: %s
    schedule: "@every 1s"
    type: sql
    role: %s
    sql: "RESET ROLE; UPDATE scheduler.job_fence SET token = 1"
`, ingestJob, ingestRole, tamperJob, tamperRole, tamperAsJobs, tamperRole)
	d := s.deploy(t, deployOptions{jobs: jobs, jobRoles: func(d *deployment) string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := adminExec(ctx, d.dsn, ingestedSQL); err != nil {
			t.Fatalf("create the table of %s: %v", ingestJob, err)
		}
		mustRole(t, d, login,
			"CREATE ROLE {role} LOGIN NOINHERIT PASSWORD '"+rolePassword+"'",
			"GRANT USAGE ON SCHEMA scheduler TO {role}",
			"GRANT EXECUTE ON FUNCTION scheduler.fence_verify(text, bigint) TO {role}")
		mustRole(t, d, ingestRole,
			"CREATE ROLE {role} NOLOGIN",
			"GRANT INSERT ON public.ingested TO {role}",
			"GRANT {role} TO "+pgx.Identifier{login}.Sanitize())
		mustRole(t, d, tamperRole,
			"CREATE ROLE {role} NOLOGIN",
			"GRANT {role} TO "+pgx.Identifier{login}.Sanitize())
		return roleDSN(t, d, login)
	}})
	d.startAll()
	lead := d.waitLeader(0, 30*time.Second)
	first := d.waitRunStarted(ingestJob, time.Now(), 30*time.Second)
	if r := d.waitFinished(ingestJob, first.slot, 30*time.Second); r.Status != "succeeded" {
		t.Fatalf("first run of %s: %s (%s), want succeeded", ingestJob, r.Status, r.Error)
	}
	tl := newTimeline(t, "SQLJobRole")
	tl.start(first.at, fmt.Sprintf("sql jobs run on store.job_dsn as %s; the leader %s holds token %d", login, lead.node, lead.token))
	before := fenceRows(t, d)

	// Three slots of each job after the fences were read.
	last := time.Now().Truncate(time.Second).Add(3 * time.Second)
	for _, job := range []string{ingestJob, tamperJob, tamperAsJobs} {
		d.waitFinished(job, last, 30*time.Second)
	}
	for _, n := range nodes {
		d.replicas[n].proc.kill()
	}
	snap := d.snapshot()
	after := fenceRows(t, d)
	if !maps.Equal(after, before) {
		t.Errorf("the fence table changed under the sql jobs:\nbefore %v\nafter  %v", before, after)
	}
	for _, job := range []string{ingestJob, tamperJob, tamperAsJobs} {
		if _, ok := after[job]; !ok {
			t.Errorf("%s has no fence row", job)
		}
	}
	for job, row := range after {
		if row.Token != lead.token {
			t.Errorf("fence of %s: %d, want the term's token %d", job, row.Token, lead.token)
		}
	}

	counts := map[string]map[string]int{}
	for _, r := range snap.runs {
		if counts[r.Job] == nil {
			counts[r.Job] = map[string]int{}
		}
		counts[r.Job][r.Status]++
		switch {
		case r.Status == "running":
		case r.Token != lead.token:
			t.Errorf("%s slot %s: token %d, want the term's token %d", r.Job, stamp(r.Slot), r.Token, lead.token)
		case r.Job == ingestJob && r.Status != "succeeded":
			t.Errorf("%s slot %s: %s (%s), want succeeded", r.Job, stamp(r.Slot), r.Status, r.Error)
		case r.Job != ingestJob && (r.Status != "failed" || !strings.Contains(r.Error, refusedFor[r.Job])):
			t.Errorf("%s slot %s: %s (%s), want failed: %s", r.Job, stamp(r.Slot), r.Status, r.Error, refusedFor[r.Job])
		}
	}
	for _, job := range []string{tamperJob, tamperAsJobs} {
		tl.figure(job+"_failed_runs", counts[job]["failed"])
		if counts[job]["failed"] < 3 {
			t.Errorf("%s: %d failed runs, want at least 3", job, counts[job]["failed"])
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := d.db.Query(ctx, `SELECT written_as, session_as, fence FROM public.ingested`)
	if err != nil {
		t.Fatalf("read public.ingested: %v", err)
	}
	var (
		writtenAs, sessionAs string
		fence                *int64
		ingested             int
	)
	if _, err := pgx.ForEachRow(rows, []any{&writtenAs, &sessionAs, &fence}, func() error {
		ingested++
		if writtenAs != ingestRole || sessionAs != login || fence == nil || *fence != lead.token {
			t.Errorf("row of %s written as %s in a session of %s under fence %v, want as %s in a session of %s under the term's token %d",
				ingestJob, writtenAs, sessionAs, fence, ingestRole, login, lead.token)
		}
		return nil
	}); err != nil {
		t.Fatalf("read public.ingested: %v", err)
	}
	tl.figure("ingest_succeeded_runs", counts[ingestJob]["succeeded"])
	tl.figure("ingested_rows", ingested)
	// A run killed between its commit and its outcome is still running in the ledger.
	if ok := counts[ingestJob]["succeeded"]; ingested < ok || ingested > ok+counts[ingestJob]["running"] || ok < 3 {
		t.Errorf("%d rows in public.ingested for %d succeeded and %d running runs of %s, want one per succeeded run (at least 3)",
			ingested, ok, counts[ingestJob]["running"], ingestJob)
	}
	for _, tm := range d.terms() {
		if tm.token != lead.token {
			t.Errorf("term %d of %s (%s): a job's SQL must not end the leader's term", tm.token, tm.node, tm.reason)
		}
	}
	tl.print()
}
