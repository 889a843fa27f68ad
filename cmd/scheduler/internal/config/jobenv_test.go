package config

import (
	"reflect"
	"strings"
	"testing"

	"scheduler/cmd/scheduler/internal/config/configtest"
)

// TestLoad_EnvNamesKeepTheirCase: environment variable names are case-sensitive, so an
// exec job's `env` reaches the job as the file spells it, from the job and from defaults, also
// when a SCHEDULER_* variable is set (as the README's production setup does for the DSN).
func TestLoad_EnvNamesKeepTheirCase(t *testing.T) {
	for _, environ := range [][]string{nil, {"SCHEDULER_NODE=n1"}} {
		t.Run(strings.Join(append([]string{"Environ"}, environ...), "_"), func(t *testing.T) {
			testEnvNamesKeepTheirCase(t, environ)
		})
	}
}

func testEnvNamesKeepTheirCase(t *testing.T, environ []string) {
	cfg, err := Load(configtest.Write(t, `
defaults:
  env: {PGHOST: db, Mixed_Case: "1"}
jobs:
  - name: own
    schedule: "@every 10s"
    type: exec
    command: [/bin/true]
    env: {PGPASSWORD: x, lower: y, CamelCase: z}
  - name: inherits
    schedule: "@every 10s"
    type: exec
    command: [/bin/true]
`), environ)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"PGPASSWORD": "x", "lower": "y", "CamelCase": "z"}; !reflect.DeepEqual(cfg.Jobs[0].Env, want) {
		t.Errorf("jobs[0].env = %v, want %v", cfg.Jobs[0].Env, want)
	}
	if want := map[string]string{"PGHOST": "db", "Mixed_Case": "1"}; !reflect.DeepEqual(cfg.Jobs[1].Env, want) {
		t.Errorf("jobs[1].env = %v, want %v (from defaults)", cfg.Jobs[1].Env, want)
	}

	_, err = Load(configtest.Write(t, `
jobs:
  - name: twice
    schedule: "@every 10s"
    type: exec
    command: [/bin/true]
    env: {FOO: a, foo: b}
`), environ)
	if err == nil || !strings.Contains(err.Error(), "jobs[0].env") || !strings.Contains(err.Error(), "FOO and foo differ only in case") {
		t.Fatalf("Load = %v, want a problem naming jobs[0].env and both names", err)
	}
}
