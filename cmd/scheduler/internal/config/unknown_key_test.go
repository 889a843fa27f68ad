package config

import (
	"strings"
	"testing"

	"scheduler/cmd/scheduler/internal/config/configtest"
)

func TestLoad_UnknownKeySuggestsTheNearest(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"Top", "nodes: a\n" + configtest.MinimalJob, `nodes: unknown key; did you mean "node"?`},
		{"Nested", "etcd:\n  endpoint: [a:1]\n" + configtest.MinimalJob, `etcd.endpoint: unknown key; did you mean "endpoints"?`},
		{"Deeper", "etcd:\n  tls: {cafile: x}\n" + configtest.MinimalJob, `etcd.tls.cafile: unknown key; did you mean "ca_file"?`},
		{"Job", configtest.MinimalJob + "    retires: 3\n", `jobs[0].retires: unknown key; did you mean "retries"?`},
		{"JobSpecKey", configtest.MinimalJob + "    shedule: '@daily'\n", `jobs[0].shedule: unknown key; did you mean "schedule"?`},
		{"Defaults", "defaults:\n  timezon: UTC\n" + configtest.MinimalJob, `defaults.timezon: unknown key; did you mean "timezone"?`},
		{"JobHistory", configtest.MinimalJob + "    history: {max_run: 3}\n", `jobs[0].history.max_run: unknown key; did you mean "max_runs"?`},
		{"Outbox", "outbox:\n  smtp: {adr: x}\n" + configtest.MinimalJob, `outbox.smtp.adr: unknown key; did you mean "addr"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(configtest.Write(t, tc.body), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err=%v, want %q", err, tc.want)
			}
		})
	}
	t.Run("NothingNear", func(t *testing.T) {
		_, err := Load(configtest.Write(t, "colour: red\n"+configtest.MinimalJob), nil)
		if err == nil || !strings.Contains(err.Error(), "colour: unknown key") || strings.Contains(err.Error(), "did you mean") {
			t.Fatalf("err=%v, want an unknown key and no suggestion", err)
		}
	})
}
