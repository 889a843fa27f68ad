package config

import (
	"strings"
	"testing"

	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/cmd/scheduler/internal/redact"
)

// TestLoad_SQLJobRole checks the keys of sql jobs' roles: role and store.job_dsn need a
// Postgres store, a role is a lower-case identifier, the job DSN must parse, and a role is for
// sql jobs only.
func TestLoad_SQLJobRole(t *testing.T) {
	const sqlJob = "jobs:\n  - name: a\n    schedule: '@daily'\n    type: sql\n    sql: select 1\n"
	const pg = "store:\n  dsn: postgres://u@db/app\n"
	invalid := []struct {
		name string
		yaml string
		want []string
	}{
		{"RoleWithSQLite", sqlJob + "    role: nightly\n", []string{"jobs[0].role: needs a PostgreSQL store"}},
		{"DefaultRoleWithSQLite", "defaults:\n  role: nightly\n" + sqlJob, []string{"defaults.role: needs a PostgreSQL store"}},
		{"JobDSNWithSQLite", "store:\n  job_dsn: postgres://jobs@db/app\n" + sqlJob, []string{"store.job_dsn: needs a PostgreSQL store"}},
		{"JobDSNUnparsable", pg + "  job_dsn: 'postgres://u:hunter2@host:notaport/db'\n" + sqlJob, []string{"store.job_dsn: not a valid PostgreSQL connection string"}},
		{"RoleNotIdentifier", pg + sqlJob + "    role: Nightly-Job\n", []string{"jobs[0].role: must be a lower-case SQL identifier"}},
		{"RoleQuoteInjection", pg + sqlJob + "    role: 'x\"; DROP TABLE runs; --'\n", []string{"jobs[0].role: must be a lower-case SQL identifier"}},
		{"DefaultRoleNotIdentifier", pg + "defaults:\n  role: 9lives\n" + sqlJob, []string{"defaults.role: must be a lower-case SQL identifier"}},
		// Postgres gives these names a meaning of their own: SET LOCAL ROLE none is RESET ROLE.
		{"RoleNone", pg + sqlJob + "    role: none\n", []string{`jobs[0].role: "none" is reserved by PostgreSQL: SET ROLE none resets the role`}},
		{"RoleNoneInDefaults", pg + "defaults:\n  role: none\n" + sqlJob, []string{`defaults.role: "none" is reserved by PostgreSQL`}},
		{"RoleNoneUpperCase", pg + sqlJob + "    role: NONE\n", []string{`jobs[0].role: "NONE" is reserved by PostgreSQL`}},
		{"RolePublic", pg + sqlJob + "    role: public\n", []string{`jobs[0].role: "public" is reserved by PostgreSQL and names no role a job can run as`}},
		{"RoleCurrentUser", pg + sqlJob + "    role: current_user\n", []string{`jobs[0].role: "current_user" is reserved`}},
		{"RoleSessionUser", pg + sqlJob + "    role: session_user\n", []string{`jobs[0].role: "session_user" is reserved`}},
		{"RoleCurrentRole", pg + sqlJob + "    role: current_role\n", []string{`jobs[0].role: "current_role" is reserved`}},
		{"RoleOnExecJob", pg + "jobs:\n  - name: a\n    schedule: '@daily'\n    type: exec\n    command: [/bin/true]\n    role: nightly\n", []string{"jobs[0].role: only applies to jobs of type sql"}},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(configtest.Write(t, tc.yaml), nil)
			if err == nil {
				t.Fatal("Load accepted an invalid config")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks a password:\n%v", err)
			}
		})
	}
	t.Run("Valid", func(t *testing.T) {
		cfg, err := Load(configtest.Write(t, pg+"  job_dsn: postgres://scheduler_jobs@db/app\ndefaults:\n  role: nightly\n"+sqlJob+
			"  - name: b\n    schedule: '@daily'\n    type: sql\n    sql: select 2\n    role: other_job\n"+
			"  - name: c\n    schedule: '@daily'\n    type: exec\n    command: [/bin/true]\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Store.JobDSN != "postgres://scheduler_jobs@db/app" || cfg.Jobs[0].Role != "nightly" || cfg.Jobs[1].Role != "other_job" {
			t.Fatalf("job_dsn %q, roles %q %q", cfg.Store.JobDSN, cfg.Jobs[0].Role, cfg.Jobs[1].Role)
		}
	})
	t.Run("FromEnvironment", func(t *testing.T) {
		cfg, err := Load(configtest.Write(t, pg+sqlJob), []string{"SCHEDULER_STORE_JOB_DSN=postgres://jobs:s3cret@db/app", "SCHEDULER_DEFAULTS_ROLE=nightly"})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Store.JobDSN != "postgres://jobs:s3cret@db/app" || cfg.Jobs[0].Role != "nightly" {
			t.Fatalf("job_dsn %q, role %q from the environment", cfg.Store.JobDSN, cfg.Jobs[0].Role)
		}
		if strings.Contains(redact.DSN(cfg.Store.JobDSN), "s3cret") {
			t.Fatal("the job DSN's password is not redacted")
		}
	})
}

// TestRoleWithoutJobDSN: the daemon warns about a sql job's role only while sql jobs run on the
// scheduler's own connection.
func TestRoleWithoutJobDSN(t *testing.T) {
	cfg := &Config{Jobs: []Job{
		{Name: "e", JobSpec: JobSpec{Type: "exec", Role: "ignored"}},
		{Name: "s", JobSpec: JobSpec{Type: "sql", Role: "nightly"}},
	}}
	if got := RoleWithoutJobDSN(cfg); got != "s" {
		t.Fatalf("RoleWithoutJobDSN = %q, want s", got)
	}
	cfg.Store.JobDSN = "postgres://jobs@db/app"
	if got := RoleWithoutJobDSN(cfg); got != "" {
		t.Fatalf("with a job DSN: RoleWithoutJobDSN = %q, want none", got)
	}
}
