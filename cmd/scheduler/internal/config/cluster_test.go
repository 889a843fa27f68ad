package config

import (
	"errors"
	"strings"
	"testing"

	"scheduler/cmd/scheduler/internal/config/configtest"
)

func TestLoadCluster(t *testing.T) {
	t.Run("ValidFileKeepsItsTable", func(t *testing.T) {
		cl, err := LoadCluster(configtest.Write(t, configtest.MinimalJob), nil)
		if err != nil || cl.Rest != nil || len(cl.Config.Jobs) != 1 {
			t.Fatalf("cl=%+v err=%v, want the one job and no problems", cl, err)
		}
	})
	t.Run("BrokenJobsAreLeftOut", func(t *testing.T) {
		body := "http: {addr: nonsense}\ndefaults: {overlap: sometimes}\njobs:\n  - name: a\n    schedule: '61 * * * *'\n    type: sql\n    sql: x\n  - name: b\n    schedule: '@daily'\n    type: exec\n    command: [/bin/true]\n    bogus: 1\n"
		cl, err := LoadCluster(configtest.Write(t, body), nil)
		if err != nil {
			t.Fatalf("err=%v, want the file accepted for finding the cluster", err)
		}
		if len(cl.Config.Jobs) != 0 {
			t.Errorf("jobs=%+v, want none from a broken table", cl.Config.Jobs)
		}
		if cl.Rest == nil {
			t.Fatal("Rest is nil, want the problems")
		}
		msg := cl.Rest.Error()
		for _, key := range []string{"http.addr", "defaults.overlap", "jobs[0].schedule", "jobs[1].bogus"} {
			if !strings.Contains(msg, key) {
				t.Errorf("Rest %q does not name %s", msg, key)
			}
		}
	})
	for name, body := range map[string]string{
		"BadStore":    "store: {dsn: 'postgres://%zz'}\n" + configtest.MinimalJob,
		"BadEtcd":     "etcd: {endpoints: ['no port']}\n" + configtest.MinimalJob,
		"BadBackend":  "election: {backend: consul}\n" + configtest.MinimalJob,
		"BadLog":      "log: {level: loud}\n" + configtest.MinimalJob,
		"NotYAML":     "jobs: [\n",
		"UnknownNode": "node: 'a b'\n" + configtest.MinimalJob,
	} {
		t.Run("RefusesWhatFindsTheCluster/"+name, func(t *testing.T) {
			_, err := LoadCluster(configtest.Write(t, body), nil)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err=%v, want *Error", err)
			}
		})
	}
	t.Run("RefusesABadVariable", func(t *testing.T) {
		_, err := LoadCluster(configtest.Write(t, configtest.MinimalJob), []string{"SCHEDULER_STORE_DNS=x"})
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "SCHEDULER_STORE_DSN") {
			t.Fatalf("err=%v, want *Error naming the variable it is near", err)
		}
	})
}
