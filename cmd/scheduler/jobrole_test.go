package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"scheduler"
	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/internal/testenv"
)

// recommendedJobRoles sets up the README's recommended roles for sql jobs on the database of
// dsn, the scheduler's own: the NOINHERIT login role of store.job_dsn with the check-only fence
// function, and a job role granted to it with INSERT on stock_scans. It returns the job DSN and
// the job role's name.
func recommendedJobRoles(t *testing.T, dsn string) (jobDSN, role string) {
	t.Helper()
	jobDSN = testenv.MustRole(t, dsn, "scheduler_jobs",
		`ALTER ROLE {role} NOINHERIT`,
		`GRANT USAGE ON SCHEMA scheduler TO {role}`,
		`GRANT EXECUTE ON FUNCTION scheduler.fence_verify(text, bigint) TO {role}`)
	jobs := pgx.Identifier{testenv.RoleName(jobDSN)}.Sanitize()
	role = testenv.RoleName(testenv.MustRole(t, dsn, "ingest_job",
		`ALTER ROLE {role} NOLOGIN`,
		`GRANT INSERT ON public.stock_scans TO {role}`,
		`GRANT {role} TO `+jobs))
	return jobDSN, role
}

// TestSQLJob_RecommendedSetup: with store.job_dsn and a role per job as the README recommends,
// a job's SQL cannot write the scheduler's tables, also after RESET ROLE or ending the
// transaction, while its writes to the table granted to its role commit, fenced.
func TestSQLJob_RecommendedSetup(t *testing.T) {
	dsn := testenv.MustDatabase(t)
	// The schema and its functions exist before the roles are granted on them.
	if code, out, errOut := runCLI(t, "migrate", "--config", configtest.Write(t, fmt.Sprintf("store: {dsn: %q}\n", dsn))); code != 0 {
		t.Fatalf("migrate: %d %s %s", code, out, errOut)
	}
	jobDSN, role := recommendedJobRoles(t, dsn)
	hostile := map[string]string{
		"raise-fence":   `UPDATE scheduler.job_fence SET token = 1 WHERE job = 'ingest'`,
		"create-table":  `CREATE TABLE scheduler.x (a int)`,
		"reset-role":    `RESET ROLE; UPDATE scheduler.job_fence SET token = 1 WHERE job = 'ingest'`,
		"delete-runs":   `DELETE FROM scheduler.runs`,
		"commit-first":  `COMMIT; DELETE FROM scheduler.runs`,
		"fence-check":   `SELECT scheduler.fence_check('ingest', 9000000000000)`,
		"other-table":   `INSERT INTO public.invoices (client_id, month, amount, token) VALUES (1, 'x', 1, 1)`,
		"temp-and-lock": `SELECT pg_advisory_lock(1); CREATE TEMP TABLE t (a int); INSERT INTO scheduler.job_fence (job, token) VALUES ('x', 1)`,
		// The fence's SQLSTATE raised by a deferred trigger, naming a job not in the table: a
		// failed run of its own, not a refusal that would end the term.
		"forged-refusal": `CREATE TEMP TABLE t (x int);
			CREATE FUNCTION pg_temp.forge() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
				RAISE EXCEPTION 'fenced out' USING ERRCODE = 'JF001', DETAIL = 'job=no-such-job token=1 fence=2'; END $$;
			CREATE CONSTRAINT TRIGGER forge AFTER INSERT ON t DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION pg_temp.forge();
			INSERT INTO t VALUES (1)`,
	}
	var table strings.Builder
	fmt.Fprintf(&table, "store: {dsn: %q, job_dsn: %q}\ndefaults: {schedule: \"@yearly\", role: %s}\njobs:\n", dsn, jobDSN, role)
	table.WriteString("  - name: ingest\n    type: sql\n    sql: \"INSERT INTO stock_scans (sku, quantity) VALUES ('ok', 1)\"\n")
	for name, text := range hostile {
		fmt.Fprintf(&table, "  - name: %s\n    type: sql\n    sql: %q\n", name, text)
	}
	const token = 50
	l := lead(t, "", table.String(), token)
	db := openDB(t, "pgx", dsn)
	runs := func() int { return count(t, db, `SELECT count(*) FROM scheduler.runs`) }

	r := l.run("ingest")
	wantRun(t, r, scheduler.StatusSucceeded, token)
	if n := count(t, db, `SELECT count(*) FROM stock_scans WHERE sku = 'ok'`); n != 1 {
		t.Fatalf("the job's own write: %d rows, want 1", n)
	}
	for name, text := range hostile {
		t.Run(name, func(t *testing.T) {
			before := runs()
			r := l.run(name)
			wantRun(t, r, scheduler.StatusFailed, token)
			t.Logf("%s: %s", text, r.Error)
			if n := runs(); n < before+1 {
				t.Fatalf("scheduler.runs went from %d to %d rows", before, n)
			}
			fences, err := l.store.Fences(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for job, f := range fences {
				if f != token {
					t.Fatalf("fence of %s = %d, want %d: the job's SQL changed it", job, f, token)
				}
			}
			if _, ok := fences["x"]; ok {
				t.Fatal("the job's SQL created a fence row")
			}
			if n := count(t, db, `SELECT count(*) FROM pg_tables WHERE schemaname = 'scheduler' AND tablename = 'x'`); n != 0 {
				t.Fatal("the job's SQL created a table in the scheduler's schema")
			}
			if n := count(t, db, `SELECT count(*) FROM invoices`); n != 0 {
				t.Fatal("the job's SQL wrote a table its role was not granted")
			}
			if n := count(t, db, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 1`); n != 0 {
				t.Fatal("the job's session lock outlived its run")
			}
		})
	}
	// A stale token writes nothing, on the job connection too.
	if err := l.stale("ingest"); !errors.Is(err, scheduler.ErrFenced) {
		t.Fatalf("stale token: err %v, want ErrFenced", err)
	}
	if n := count(t, db, `SELECT count(*) FROM stock_scans`); n != 1 {
		t.Fatalf("after a stale run: %d rows, want 1", n)
	}
}

// TestDaemon_JobDSN: a replica with store.job_dsn runs its sql jobs on that connection, as its
// role, and never logs the job DSN's password.
func TestDaemon_JobDSN(t *testing.T) {
	dsn := testenv.MustDatabase(t)
	c := newCluster(t, dsn, "")
	jobDSN := testenv.MustRole(t, dsn, "scheduler_jobs",
		`ALTER ROLE {role} NOINHERIT`,
		`GRANT USAGE ON SCHEMA scheduler TO {role}`,
		`GRANT EXECUTE ON FUNCTION scheduler.fence_verify(text, bigint) TO {role}`,
		`GRANT INSERT ON public.stock_scans TO {role}`)
	const secret = "j0b-Pa55word"
	u, err := url.Parse(jobDSN)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), secret)
	c.writeConfig(testJobs + `  - name: whoami
    schedule: "* * * * * *"
    type: sql
    sql: "INSERT INTO stock_scans (sku, quantity) SELECT current_user, 1"
    misfire: skip
`)
	body, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	withJobDSN := strings.Replace(string(body), "store: {dsn: ", fmt.Sprintf("store: {job_dsn: %q, dsn: ", u.String()), 1)
	if err := os.WriteFile(c.path, []byte(withJobDSN), 0o600); err != nil {
		t.Fatal(err)
	}
	r := c.start("a")
	c.wait("whoami runs", func() bool { return countStatus(c.history("whoami"), scheduler.StatusSucceeded) >= 1 })
	db := openDB(t, "pgx", dsn)
	if n := count(t, db, `SELECT count(*) FROM stock_scans WHERE sku = '`+u.User.Username()+`'`); n < 1 {
		t.Fatalf("no row written as %s: the sql job did not run on the job connection", u.User.Username())
	}
	if strings.Contains(r.logs.String(), secret) || strings.Contains(c.cli("status", "--json"), secret) {
		t.Fatal("the job DSN's password appears in the logs or the status")
	}
	if !strings.Contains(r.logs.String(), "sql jobs run on their own connection") {
		t.Fatal("the replica does not say that sql jobs run on the job connection")
	}
}
