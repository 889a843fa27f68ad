package config

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/cmd/scheduler/internal/config/internal/keypath"
)

// TestLoad_Numbers: a whole-number key refuses a fraction and a number too large for it, from
// the file and from a variable alike, and says which it is.
func TestLoad_Numbers(t *testing.T) {
	huge := "99999999999999999999"
	cases := []struct {
		name string
		yaml string
		env  []string
		want []string
	}{
		{"RetriesHugeFile", configtest.MinimalJob + "    retries: " + huge + "\n", nil, []string{"jobs[0].retries: is too large, got 1e+20"}},
		{"RetriesHugeEnv", configtest.MinimalJob, []string{"SCHEDULER_DEFAULTS_RETRIES=" + huge}, []string{"defaults.retries: set by SCHEDULER_DEFAULTS_RETRIES: is too large, got " + huge}},
		{"RetriesUint64File", configtest.MinimalJob + "    retries: 18446744073709551615\n", nil, []string{"jobs[0].retries: is too large, got 18446744073709551615"}},
		{"RetriesFarBelowZero", configtest.MinimalJob + "    retries: -" + huge + "\n", nil, []string{"jobs[0].retries: is too far below zero"}},
		{"MaxRunsHuge", "history: {max_runs: " + huge + "}\n" + configtest.MinimalJob, nil, []string{"history.max_runs: is too large"}},
		{"MaxRunsHugeEnv", configtest.MinimalJob, []string{"SCHEDULER_HISTORY_MAX_RUNS=" + huge}, []string{"history.max_runs: set by SCHEDULER_HISTORY_MAX_RUNS: is too large"}},
		{"BatchHuge", "outbox: {batch: " + huge + "}\n" + configtest.MinimalJob, nil, []string{"outbox.batch: is too large"}},
		{"RetriesFractionFile", "defaults: {retries: 2.9}\n" + configtest.MinimalJob, nil, []string{"defaults.retries: must be a whole number, got 2.9"}},
		{"RetriesFractionEnv", configtest.MinimalJob, []string{"SCHEDULER_DEFAULTS_RETRIES=1.5"}, []string{"defaults.retries: set by SCHEDULER_DEFAULTS_RETRIES: must be a whole number, got 1.5"}},
		{"RetriesFractionJob", configtest.MinimalJob + "    retries: 2.9\n", nil, []string{"jobs[0].retries: must be a whole number, got 2.9"}},
		{"MaxAttemptsFraction", "outbox: {max_attempts: 2.5}\n" + configtest.MinimalJob, nil, []string{"outbox.max_attempts: must be a whole number, got 2.5"}},
		{"RedisDBFraction", "redis: {db: 1.5}\n" + configtest.MinimalJob, nil, []string{"redis.db: must be a whole number, got 1.5"}},
		{"NotifyAfterFraction", "defaults: {notify: {after: 0.5}}\n" + configtest.MinimalJob, nil, []string{"defaults.notify.after: must be a whole number, got 0.5"}},
		{"NaN", configtest.MinimalJob + "    retries: .nan\n", nil, []string{"jobs[0].retries: must be a whole number, got NaN"}},
		{"Infinity", configtest.MinimalJob + "    retries: .inf\n", nil, []string{"jobs[0].retries: is too large"}},
		{"DurationTooLongFile", "etcd: {dial_timeout: 9999999h}\n" + configtest.MinimalJob, nil, []string{`etcd.dial_timeout: "9999999h" is too long: a duration is at most 2562047h47m16s`}},
		{"DurationTooLongEnv", configtest.MinimalJob, []string{"SCHEDULER_DEFAULTS_TIMEOUT=9999999h"}, []string{"defaults.timeout: set by SCHEDULER_DEFAULTS_TIMEOUT:", "is too long"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ce := mustLoadError(t, configtest.Write(t, tc.yaml), tc.env, tc.want...)
			if strings.Contains(ce.Error(), "-9223372036854775808") {
				t.Errorf("error wraps the number to the most negative:\n%v", ce)
			}
		})
	}
}

// TestLoad_NumbersAccepted: whole numbers, however spelled, and the bounds themselves load.
func TestLoad_NumbersAccepted(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		env  []string
	}{
		{"RetriesWholeFloat", configtest.MinimalJob + "    retries: 3.0\n", nil},
		{"RetriesWholeFloatEnv", configtest.MinimalJob, []string{"SCHEDULER_DEFAULTS_RETRIES=3.0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { loadWant(t, configtest.Write(t, tc.yaml), tc.env) })
	}
}

// TestLoad_InheritedValueReportedOnce: a bad value that jobs inherit is reported where it was
// written, not once more per job (nor under defaults.history for the top-level history).
func TestLoad_InheritedValueReportedOnce(t *testing.T) {
	ce := mustLoadError(t, configtest.Write(t, "history: {max_runs: 1.5}\ndefaults: {retries: x}\n"+configtest.MinimalJob), nil,
		"history.max_runs: must be a whole number", `defaults.retries: "x" is not a whole number`)
	if len(ce.Problems) != 2 {
		t.Fatalf("problems=%v, want the two values once each", ce.Problems)
	}
}

// TestLoad_ListsFromEnv: every list key, found from the Config type, is split on commas when a
// variable sets it, and an empty entry is an error naming the variable.
func TestLoad_ListsFromEnv(t *testing.T) {
	var keys []string
	for k := range listKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range []string{"etcd.endpoints", "zookeeper.servers", "outbox.webhook.hosts", "defaults.command", "defaults.notify.on", "defaults.notify.email"} {
		if !slices.Contains(keys, k) {
			t.Fatalf("list keys %v lack %s", keys, k)
		}
	}
	for _, key := range keys {
		if key == "jobs" {
			continue
		}
		name := envName(key)
		t.Run(name, func(t *testing.T) {
			cfg, problems := decodeConfig([]byte(configtest.MinimalJob), []string{name + "=a:1, b:2"}, t.TempDir())
			for _, p := range problems {
				t.Errorf("problem %v", p)
			}
			if got := listAt(t, cfg, key); !slices.Equal(got, []string{"a:1", "b:2"}) {
				t.Fatalf("%s=%q, want [a:1 b:2]", key, got)
			}
			if _, problems := decodeConfig([]byte("jobs: []\n"), []string{name + "="}, t.TempDir()); len(problems) != 0 {
				t.Fatalf("an empty variable: %v, want an empty list", problems)
			}
			for _, bad := range []string{",,", " ", "a:1,", ",a:1", "a:1,,b:2"} {
				mustLoadError(t, configtest.Write(t, configtest.MinimalJob), []string{name + "=" + bad}, key+": set by "+name+": entry ", "is empty")
			}
		})
	}
}

// listAt reads the list at key path key of cfg.
func listAt(t *testing.T, cfg *Config, key string) []string {
	t.Helper()
	var got []string
	found := false
	keypath.Walk(reflect.TypeFor[Config](), "", nil, func(k string, index []int, leaf bool) bool {
		if leaf && k == key {
			got, found = reflect.ValueOf(cfg).Elem().FieldByIndex(index).Interface().([]string), true
		}
		return true
	})
	if !found {
		t.Fatalf("no list at %s", key)
	}
	return got
}

// TestLoad_EmptyEndpointsFromEnv: endpoints of only commas or blanks do not start the embedded
// etcd beside a shared store.
func TestLoad_EmptyEndpointsFromEnv(t *testing.T) {
	for _, v := range []string{",,", " "} {
		mustLoadError(t, configtest.Write(t, configtest.MinimalJob), []string{"SCHEDULER_ETCD_ENDPOINTS=" + v, "SCHEDULER_STORE_DSN=postgres://u@h/db"},
			"etcd.endpoints: set by SCHEDULER_ETCD_ENDPOINTS: entry 1 of", "is empty")
	}
}

// TestLoad_ParamsFromEnv: a builtin's whole-number parameter set by a variable is read as the
// same number in the file would be.
func TestLoad_ParamsFromEnv(t *testing.T) {
	path := configtest.Write(t, "defaults: {params: {clients: 10}}\njobs:\n  - {name: a, schedule: '@hourly', type: builtin, builtin: invoices}\n")
	cfg, err := Load(path, []string{"SCHEDULER_DEFAULTS_PARAMS_CLIENTS=5"})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := cfg.Jobs[0].Params["clients"]; got != "5" {
		t.Fatalf("clients=%v, want the variable's 5", got)
	}
	mustLoadError(t, path, []string{"SCHEDULER_DEFAULTS_PARAMS_CLIENTS=5.5"}, "defaults.params.clients: set by SCHEDULER_DEFAULTS_PARAMS_CLIENTS: must be a whole number")
	// A whole number written with a fraction or an exponent is taken from both, as whole-number
	// keys are; a fraction is refused by both.
	for _, v := range []string{"5.0", "5e0"} {
		if _, err := Load(path, []string{"SCHEDULER_DEFAULTS_PARAMS_CLIENTS=" + v}); err != nil {
			t.Errorf("SCHEDULER_DEFAULTS_PARAMS_CLIENTS=%s: %v, want it read as 5", v, err)
		}
		if _, err := Load(configtest.Write(t, "defaults: {params: {clients: "+v+"}}\njobs:\n  - {name: a, schedule: '@hourly', type: builtin, builtin: invoices}\n"), nil); err != nil {
			t.Errorf("clients: %s in the file: %v, want it read as 5", v, err)
		}
	}
	mustLoadError(t, configtest.Write(t, "defaults: {params: {clients: 5.5}}\njobs:\n  - {name: a, schedule: '@hourly', type: builtin, builtin: invoices}\n"), nil, "defaults.params.clients: must be a whole number")
	for _, v := range []string{"NaN", "Inf", "1e19", "-1e19"} {
		mustLoadError(t, path, []string{"SCHEDULER_DEFAULTS_PARAMS_CLIENTS=" + v}, "defaults.params.clients: set by SCHEDULER_DEFAULTS_PARAMS_CLIENTS: must be a whole number")
	}
}
