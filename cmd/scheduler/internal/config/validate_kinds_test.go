package config

import (
	"slices"
	"strings"
	"testing"

	"scheduler/cmd/scheduler/internal/config/configtest"
)

// TestValidate_KindProblems: Validate itself reports what a job's kind refuses, through the
// kind's own check, at the job's key path (or under defaults for an inherited value), so
// `validate` needs no build to find it.
func TestValidate_KindProblems(t *testing.T) {
	job := func(typ, extra string) string {
		return "jobs:\n  - name: a\n    schedule: '@daily'\n    type: " + typ + "\n" + extra
	}
	tests := []struct {
		name, yaml string
		want       []string
	}{
		// Header names come back as viper folds them, in lower case.
		{"RunHeader", job("http", "    url: http://x/\n    headers: {Fencing-Token: '1'}\n"),
			[]string{"jobs[0].headers.fencing-token: set by the scheduler for each run"}},
		{"RunVariable", job("exec", "    command: [/bin/true]\n    env: {SCHEDULER_JOB: x}\n"),
			[]string{"jobs[0].env.SCHEDULER_JOB: set by the scheduler for each run"}},
		{"NULInCommand", job("exec", "    command: [/bin/true, \"a\\0b\"]\n"),
			[]string{"jobs[0].command[1]: contains a NUL byte"}},
		{"UnknownBuiltin", job("builtin", "    builtin: payroll\n"),
			[]string{`jobs[0].builtin: unknown builtin "payroll" (known: invoices, stock)`}},
		{"StockParams", job("builtin", "    builtin: stock\n    params: {x: 1}\n"),
			[]string{"jobs[0].params.x: unknown parameter of builtin stock (it takes none)"}},
		// A bad default is a problem of the file whichever jobs inherit it, none included.
		{"DefaultNoJobInherits", "defaults:\n  env: {SCHEDULER_RUN_ID: '1'}\n" + job("http", "    url: http://x/\n"),
			[]string{"defaults.env.SCHEDULER_RUN_ID: set by the scheduler for each run"}},
		{"DefaultHeader", "defaults:\n  headers: {Idempotency-Key: k}\n" + job("http", "    url: http://x/\n"),
			[]string{"defaults.headers.idempotency-key: set by the scheduler for each run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems := checkConfig(configtest.Write(t, tt.yaml), nil)
			if cfg == nil {
				t.Fatalf("config not decoded: %q", problems)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("Validate problems %q, want %q", got, w)
				}
			}
			for _, w := range tt.want {
				if n := strings.Count(strings.Join(got, "\n"), w); n > 1 {
					t.Errorf("%q reported %d times, want once", w, n)
				}
			}
		})
	}
}

// TestValidate_URLWithoutPassword: an http job's bad URL is quoted in its problem without the
// password it holds; `validate` output lands in terminals and CI logs.
func TestValidate_URLWithoutPassword(t *testing.T) {
	_, err := Load(configtest.Write(t, "jobs:\n  - name: a\n    schedule: '@daily'\n    type: http\n    url: ftp://deploy:s3cret@x/hook\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "jobs[0].url: must be an absolute http") {
		t.Fatalf("err = %v, want the url refused", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the problem shows the password: %v", err)
	}
}
