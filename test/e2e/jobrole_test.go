package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The roles below are the README's: a job's own database role ("A job's own database role").
// Roles belong to the Postgres server, not to the scenario's database, so their names are made
// unique.

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
