package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/cmd/scheduler/internal/config/internal/filelimit"
	"scheduler/cmd/scheduler/internal/config/internal/keypath"
	"scheduler/internal/schedule"
)

// mustLoadError loads path with env and fails the test unless the load fails with a *Error
// whose text mentions every want; it returns that error.
func mustLoadError(t *testing.T, path string, env []string, want ...string) *Error {
	t.Helper()
	_, err := Load(path, env)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err=%v, want a *Error", err)
	}
	for _, w := range want {
		if !strings.Contains(ce.Error(), w) {
			t.Errorf("error does not mention %q:\n%v", w, ce)
		}
	}
	return ce
}

// loadWant loads path with env. With no want the load must succeed, and loadWant returns nil;
// else it must fail as mustLoadError checks.
func loadWant(t *testing.T, path string, env []string, want ...string) *Error {
	t.Helper()
	if len(want) == 0 {
		if _, err := Load(path, env); err != nil {
			t.Fatalf("Load: %v", err)
		}
		return nil
	}
	return mustLoadError(t, path, env, want...)
}

// pipe makes a named pipe, with no writer, and returns its path.
func pipe(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoad_BadInput covers values, variables and sizes that used to get through.
func TestLoad_BadInput(t *testing.T) {
	cases := []struct {
		name   string
		yaml   string
		env    []string
		want   []string // substrings, each must appear in the error
		absent []string // substrings that must not
	}{
		{"HTTPPortOutOfRange", "http: {addr: 'localhost:99999'}\n", nil, []string{"http.addr:", `"localhost:99999"`, "port 99999 is out of range (0 to 65535)"}, nil},
		{"HTTPPortHuge", "http: {addr: '127.0.0.1:123456789012345678901'}\n", nil, []string{"http.addr:", "out of range"}, nil},
		{"HTTPPortUnknownService", "http: {addr: 'localhost:no-such-service'}\n", nil, []string{"http.addr:", `port "no-such-service" is neither a number`}, nil},
		{"HTTPPortMissing", "http: {addr: 'localhost:'}\n", nil, []string{"http.addr:", "the port is missing"}, nil},
		{"EndpointPortOutOfRange", "single_node: true\netcd: {endpoints: ['etcd1:70000']}\n", nil, []string{"etcd.endpoints[0]:", "port 70000 is out of range"}, nil},
		{"EndpointURLPortOutOfRange", "single_node: true\netcd: {endpoints: ['http://etcd1:70000']}\n", nil, []string{"etcd.endpoints[0]:", "port 70000 is out of range"}, nil},

		{"EmptyFile", "", nil, []string{"the file holds no settings (it is empty, or comments only): for a table without jobs write `jobs: []`"}, nil},
		{"CommentsOnly", "# jobs:\n#   - {name: a}\n", nil, []string{"the file holds no settings"}, nil},
		{"NullDocument", "~\n", nil, []string{"the file holds no settings"}, nil},
		{"EmptyFileAndVariable", "", []string{"SCHEDULER_XYZZY=1"}, []string{"the file holds no settings", "SCHEDULER_XYZZY: unknown variable"}, nil},
		{"SecondDocument", configtest.MinimalJob + "---\njobs: []\n", nil, []string{"line 7: a second YAML document begins here"}, nil},
		{"SecondDocumentBroken", configtest.MinimalJob + "---\njobs: [\n", nil, []string{"line 8: did not find expected node content"}, nil},
		{"ThirdDocument", configtest.MinimalJob + "---\n---\nnode: x\n", nil, []string{"line 8: a second YAML document begins here"}, nil},
		{"PythonTag", "node: !!python/object/apply:os.system [ls]\n" + configtest.MinimalJob, nil, []string{`line 1: the tag "!!python/object/apply:os.system" is not supported`}, nil},
		{"LocalTag", "node: !secret x\n" + configtest.MinimalJob, nil, []string{`line 1: the tag "!secret" is not supported`}, nil},
		{"BinaryTag", "jobs:\n  - {name: !!binary YmVhdA==, schedule: '@hourly', type: sql, sql: x}\n", nil, []string{`line 2: the tag "!!binary" is not supported`}, nil},
		{"NodeControlCharacter", "node: \"a\\x01b\"\n" + configtest.MinimalJob, nil, []string{`node: must not contain /, spaces or control characters, got "a\x01b"`}, nil},
		{"NodeFromVariable", configtest.MinimalJob, []string{"SCHEDULER_NODE=a\x7fb"}, []string{`node: set by SCHEDULER_NODE: must not contain /`}, nil},
		{"NodeTooLong", configtest.MinimalJob, []string{"SCHEDULER_NODE=" + strings.Repeat("n", 254)}, []string{`node: set by SCHEDULER_NODE: 254 bytes long, more than the limit of 253`}, nil},
		{"TLSFileIsAPipe", "single_node: true\netcd: {endpoints: ['e:2379']}\n" + configtest.MinimalJob, []string{"SCHEDULER_ETCD_TLS_CA_FILE=" + pipe(t)},
			[]string{"etcd.tls.ca_file: set by SCHEDULER_ETCD_TLS_CA_FILE: cannot read", "is not a regular file (a named pipe)"}, nil},
		{"TLSFileIsADevice", "single_node: true\netcd: {endpoints: ['e:2379'], tls: {cert_file: /dev/zero, key_file: /dev/urandom}}\n" + configtest.MinimalJob, nil,
			[]string{`etcd.tls.cert_file: cannot read "/dev/zero": /dev/zero is not a regular file (a device)`, `etcd.tls.key_file: cannot read "/dev/urandom"`}, nil},
		{"JobNameTooLong", "jobs:\n  - {name: " + strings.Repeat("a", 129) + ", schedule: '@hourly', type: sql, sql: x}\n", nil,
			[]string{"jobs[0].name: is 129 bytes long, more than the limit of 128"}, []string{strings.Repeat("a", 129)}},
		{"JitterHuge", configtest.MinimalJob + "    jitter: 1000000h\n", nil, []string{"jobs[0].jitter:", "1000000h0m0s must be shorter than the shortest gap", "10s"}, nil},
		{"JitterEqualToGap", configtest.MinimalJob + "    jitter: 10s\n", nil, []string{"jobs[0].jitter:", "10s must be shorter"}, nil},
		// A schedule with at most one slot a year: the jitter must be shorter than a year. Before, no
		// gap was found, and any jitter passed (the 2028 slot then fired in 2033, after 2032's).
		{"JitterLeapDay", "jobs:\n  - {name: a, schedule: '0 0 29 2 *', type: sql, sql: x, jitter: 1000000h}\n", nil,
			[]string{"jobs[0].jitter:", "1000000h0m0s must be shorter than the shortest gap", "8784h0m0s"}, nil},
		{"EveryCenturies", "jobs:\n  - {name: a, schedule: '@every 2562047h', type: sql, sql: x}\n", nil,
			[]string{"jobs[0].schedule:", "is longer than 87600h0m0s (ten years)"}, nil},
		{"JitterAboveCronGap", "jobs:\n  - {name: a, schedule: '*/5 * * * *', type: sql, sql: x, jitter: 6m}\n", nil,
			[]string{"jobs[0].jitter:", "6m0s must be shorter than the shortest gap between two slots of \"*/5 * * * *\", 5m0s"}, nil},
		{"JitterAboveIrregularGap", "jobs:\n  - {name: a, schedule: '0 0,1 * * *', timezone: Europe/Berlin, type: sql, sql: x, jitter: 2h}\n", nil,
			[]string{"jobs[0].jitter:", "1h0m0s"}, nil},
		// 02:00 is skipped on the spring-forward day and fires at 03:00, 23h before the next.
		{"JitterAboveDSTGap", "jobs:\n  - {name: a, schedule: '0 2 * * *', timezone: Europe/Berlin, type: sql, sql: x, jitter: 23h}\n", nil,
			[]string{"jobs[0].jitter: 23h0m0s must be shorter", "23h0m0s"}, nil},
		{"JitterFromDefaults", "defaults: {jitter: 1m}\n" + configtest.MinimalJob, nil, []string{"jobs[0].jitter: 1m0s (from defaults.jitter) must be shorter"}, nil},

		{"EnvTypo", "", []string{"SCHEDULER_ELECTON_TTL=10s"}, []string{"and SCHEDULER_* environment:", "SCHEDULER_ELECTON_TTL: unknown variable", "did you mean SCHEDULER_ELECTION_TTL?"}, nil},
		{"EnvTypoInNestedKey", "", []string{"SCHEDULER_ETCD_TLS_CAFILE=/x"}, []string{"SCHEDULER_ETCD_TLS_CAFILE:", "did you mean SCHEDULER_ETCD_TLS_CA_FILE?"}, nil},
		{"EnvUnknownFar", "", []string{"SCHEDULER_XYZZY=1"}, []string{"SCHEDULER_XYZZY: unknown variable"}, []string{"did you mean"}},
		{"EnvJobs", "", []string{"SCHEDULER_JOBS_0_NAME=x"}, []string{"SCHEDULER_JOBS_0_NAME: jobs cannot be set from the environment"}, nil},
		{"EnvJobsWhole", "", []string{"SCHEDULER_JOBS=[]"}, []string{"SCHEDULER_JOBS: jobs cannot be set from the environment"}, nil},
		{"EnvBadValueNamesVariable", "", []string{"SCHEDULER_ELECTION_TTL=500ms"}, []string{"and SCHEDULER_* environment:", "election.ttl: set by SCHEDULER_ELECTION_TTL: must be at least 1s"}, nil},
		{"EnvUndecodableNamesVariable", "", []string{"SCHEDULER_ETCD_DIAL_TIMEOUT=soon"}, []string{"etcd.dial_timeout: set by SCHEDULER_ETCD_DIAL_TIMEOUT:", `"soon" is not a duration`}, nil},
		{"EnvBadEndpointNamesVariable", "single_node: true\n", []string{"SCHEDULER_ETCD_ENDPOINTS=etcd1:2379,etcd2"},
			[]string{"etcd.endpoints[1]: set by SCHEDULER_ETCD_ENDPOINTS:"}, []string{"etcd.endpoints[0]"}},
		{"EnvBadDefaultNamesVariable", configtest.MinimalJob, []string{"SCHEDULER_DEFAULTS_RETRIES=many"}, []string{"set by SCHEDULER_DEFAULTS_RETRIES:", `"many" is not a whole number`}, nil},
		// A job's inherited value is its defaults key's, here a variable's: before, the problem was
		// blamed on the file, which holds no jitter.
		{"EnvDefaultInheritedNamesVariable", configtest.MinimalJob, []string{"SCHEDULER_DEFAULTS_JITTER=1m"},
			[]string{"and SCHEDULER_* environment:", "jobs[0].jitter: set by SCHEDULER_DEFAULTS_JITTER: 1m0s (from defaults.jitter) must be shorter"}, nil},
		{"FileValueNotBlamedOnVariable", "election: {ttl: 500ms}\n", []string{"SCHEDULER_LOG_LEVEL=debug"}, []string{"election.ttl: must be at least 1s"}, []string{"set by", "environment"}},

		{"EndpointsWithoutSharedStore", "etcd: {endpoints: ['etcd1:2379']}\n", nil,
			[]string{"store.dsn: is empty while etcd.endpoints is set", "every replica could run every slot", "single_node: true"}, nil},
		{"EndpointsFromEnvWithoutSharedStore", "", []string{"SCHEDULER_ETCD_ENDPOINTS=etcd1:2379"}, []string{"store.dsn: is empty while etcd.endpoints is set"}, nil},

		// Keys that differ only in case are one key to viper, which kept either value.
		{"CaseTwinsInJob", configtest.MinimalJob + "    Schedule: '@every 7s'\n    SCHEDULE: '@every 9s'\n", nil,
			[]string{`jobs[0].schedule: "SCHEDULE", "Schedule" and "schedule" differ only in case`, "keep one of them"}, []string{"is required"}},
		{"CaseTwinsJobs", "Jobs: []\n" + configtest.MinimalJob, nil, []string{`jobs: "Jobs" and "jobs" differ only in case`}, nil},
		{"CaseTwinsNode", "node: a\nNode: b\n" + configtest.MinimalJob, nil, []string{`node: "Node" and "node" differ only in case`}, nil},
		{"CaseTwinsNested", "store: {schema: a, Schema: b}\n" + configtest.MinimalJob, nil, []string{`store.schema: "Schema" and "schema" differ only in case`}, nil},
		{"CaseTwinsSections", "store: {schema: a}\nSTORE: {schema: b}\n" + configtest.MinimalJob, nil, []string{`store: "STORE" and "store" differ only in case`}, nil},
		{"CaseTwinsHeaders", "jobs:\n  - {name: a, schedule: '@hourly', type: http, url: 'http://h/', headers: {X-A: '1', x-a: '2'}}\n", nil,
			[]string{`jobs[0].headers.x-a: "X-A" and "x-a" differ only in case: HTTP header names are case-insensitive`}, nil},
		{"CaseTwinsDefaultHeaders", "defaults: {headers: {Accept: a, ACCEPT: b}}\n" + configtest.MinimalJob, nil,
			[]string{`defaults.headers.accept: "ACCEPT" and "Accept" differ only in case`}, nil},
		{"CaseTwinFromMerge", "base: &b {schedule: '@every 5s', retries: 1}\n" + configtest.MinimalJob + "    <<: *b\n    Retries: 2\n", nil,
			[]string{`jobs[0].retries: "Retries" and "retries" differ only in case`}, nil},
		{"CaseTwinsBesideANumberKey", "jobs:\n  - {name: a, 1: x, schedule: '@hourly', Schedule: '@daily', type: sql, sql: x}\n", nil,
			[]string{`jobs[0].schedule: "Schedule" and "schedule" differ only in case`, "jobs[0].1: unknown key"}, nil},
		{"CaseTwinsParams", "jobs:\n  - {name: a, schedule: '@daily', type: builtin, builtin: invoices, params: {clients: 1, Clients: 2}}\n", nil,
			[]string{`jobs[0].params.clients: "Clients" and "clients" differ only in case`}, nil},

		// A key never holds a dot: each was dropped, or applied elsewhere, without a word.
		{"DottedJobHistoryKeys", configtest.MinimalJob + "    history.max_age: 0s\n    history.max_runs: 0\n", nil,
			[]string{`jobs[0].history.max_age: "history.max_age" is one key, not a path, and no key holds a dot: write history: {max_age: ...}`,
				`jobs[0].history.max_runs: "history.max_runs" is one key`}, nil},
		{"DottedKeysUnderInheritedKeys", configtest.MinimalJob + "    timezone.name: x\n    enabled.really: false\n    timeout.x: 1\n", nil,
			[]string{`jobs[0].timezone.name: "timezone.name" is one key`, `jobs[0].enabled.really: "enabled.really" is one key`, `jobs[0].timeout.x: "timeout.x" is one key`}, nil},
		{"DottedTopKey", "store: {schema: aaa}\nstore.schema: bbb\n" + configtest.MinimalJob, nil,
			[]string{`store.schema: "store.schema" is one key, not a path, and no key holds a dot: write store: {schema: ...}`}, nil},
		{"DottedDefaultsKey", "defaults: {notify.after: 2}\n" + configtest.MinimalJob, nil, []string{`defaults.notify.after: "notify.after" is one key`}, nil},
		{"DottedDeepKey", "outbox.smtp.addr: 'mail:25'\n" + configtest.MinimalJob, nil, []string{"write outbox: {smtp: {addr: ...}}"}, nil},
		{"DottedParam", "jobs:\n  - {name: a, schedule: '@daily', type: builtin, builtin: invoices, params: {a.b: 1}}\n", nil,
			[]string{`jobs[0].params.a.b: "a.b" is one key`}, nil},

		// The store parses a DSN's pool parameters too: validate must refuse what it refuses.
		{"DSNPoolMaxConnsNotANumber", "store: {dsn: 'postgres://u:hunter2@127.0.0.1:1/db?pool_max_conns=abc'}\n" + configtest.MinimalJob, nil,
			[]string{`store.dsn: has a pool parameter the connection pool refuses (pool_max_conns="abc")`}, []string{"hunter2"}},
		{"DSNPoolMaxConnsZero", "store: {dsn: 'postgres://u:hunter2@127.0.0.1:1/db?pool_max_conns=0'}\n" + configtest.MinimalJob, nil,
			[]string{`store.dsn: has a pool parameter`, `pool_max_conns="0"`}, []string{"hunter2"}},
		{"DSNPoolLifetime", "store: {dsn: 'host=127.0.0.1 password=hunter2 pool_max_conn_lifetime=zz'}\n" + configtest.MinimalJob, nil,
			[]string{`store.dsn: has a pool parameter`, `pool_max_conn_lifetime="zz"`}, []string{"hunter2"}},
		{"JobDSNPoolFromVariable", "store: {dsn: 'postgres://u@127.0.0.1:1/db'}\n" + configtest.MinimalJob,
			[]string{"SCHEDULER_STORE_JOB_DSN=postgres://j:hunter2@127.0.0.1:1/db?pool_max_conns=abc"},
			[]string{`store.job_dsn: set by SCHEDULER_STORE_JOB_DSN: has a pool parameter`}, []string{"hunter2"}},

		{"DataDirNUL", "data_dir: \"a\\0b\"\n" + configtest.MinimalJob, nil, []string{"data_dir: contains a NUL byte"}, nil},
		{"LogLevelUpperCase", "log: {level: WARN}\n" + configtest.MinimalJob, nil, []string{`log.level: must be one of debug, info, warn, error; got "WARN"`}, nil},
		{"LogLevelDPanic", "log: {level: dpanic}\n" + configtest.MinimalJob, nil, []string{`log.level: must be one of debug, info, warn, error; got "dpanic"`}, nil},
		{"LogLevelFatal", configtest.MinimalJob, []string{"SCHEDULER_LOG_LEVEL=fatal"}, []string{`log.level: set by SCHEDULER_LOG_LEVEL: must be one of`}, nil},
		{"EtcdAuthEmbedded", "etcd: {username: u, password: p}\n" + configtest.MinimalJob, nil,
			[]string{"etcd.username: etcd.username and etcd.password need etcd.endpoints: the embedded etcd (no etcd.endpoints) runs without authentication"}, nil},
		{"EtcdAuthEmbeddedFromVariables", configtest.MinimalJob, []string{"SCHEDULER_ETCD_USERNAME=u", "SCHEDULER_ETCD_PASSWORD=p"},
			[]string{"etcd.username: set by SCHEDULER_ETCD_USERNAME: etcd.username and etcd.password need etcd.endpoints"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ce := mustLoadError(t, configtest.Write(t, tc.yaml), tc.env, tc.want...)
			for _, a := range tc.absent {
				if strings.Contains(ce.Error(), a) {
					t.Errorf("error mentions %q:\n%v", a, ce)
				}
			}
		})
	}
}

// TestLoad_GoodInput: the checks above refuse nothing that is right.
func TestLoad_GoodInput(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string
		env   []string
		check func(*testing.T, *Config)
	}{
		{"NoJobs", "jobs: []\n", nil, nil},
		{"EndMarkers", configtest.MinimalJob + "---\n...\n---\n", nil, nil},
		{"CoreTags", "node: !!str 12\nshutdown_grace: !!str 5s\n" + configtest.MinimalJob + "    retries: !!int 2\n", nil, nil},
		{"Anchors", "defaults: &d {timeout: 10s}\njobs:\n  - {<<: *d, name: a, schedule: '@hourly', type: sql, sql: x}\n", nil, nil},
		{"JobNameLongest", "jobs:\n  - {name: " + strings.Repeat("a", 128) + ", schedule: '@hourly', type: sql, sql: x}\n", nil, nil},
		{"HTTPPortZero", "http: {addr: ':0'}\n" + configtest.MinimalJob, nil, nil},
		{"HTTPPortMax", "http: {addr: '[::1]:65535'}\n" + configtest.MinimalJob, nil, nil},
		{"HTTPServiceName", "http: {addr: 'localhost:http'}\n" + configtest.MinimalJob, nil, nil},
		{"JitterBelowGap", configtest.MinimalJob + "    jitter: 9s\n", nil, nil},
		{"JitterBelowDailyGap", "jobs:\n  - {name: a, schedule: '0 2 * * *', timezone: Europe/Berlin, type: sql, sql: x, jitter: 22h59m}\n", nil, nil},
		{"SingleNode", "single_node: true\netcd: {endpoints: ['etcd1:2379']}\n" + configtest.MinimalJob, nil,
			func(t *testing.T, c *Config) {
				if !c.SingleNode {
					t.Fatal("single_node not read")
				}
			}},
		{"SharedStore", "etcd: {endpoints: ['etcd1:2379']}\nstore: {dsn: 'postgres://db/app'}\n" + configtest.MinimalJob, nil, nil},
		{"RunVariables", configtest.MinimalJob, []string{"SCHEDULER_FENCE_TOKEN=42", "SCHEDULER_JOB=beat", "SCHEDULER_SCHEDULED_AT=2026-03-01T00:00:00Z",
			"SCHEDULER_RUN_ID=7", "SCHEDULER_ATTEMPT=1", "SCHEDULER_RUN_SECRET=00ff"}, nil},
		{"SingleNodeFromEnv", "etcd: {endpoints: ['etcd1:2379']}\n" + configtest.MinimalJob, []string{"SCHEDULER_SINGLE_NODE=true"}, nil},
		// defaults.dir has no default setting: the variable is known from the Config type alone.
		{"VariableForKeyWithoutDefault", "defaults: {type: exec}\n" + configtest.MinimalJob, []string{"SCHEDULER_DEFAULTS_DIR=/srv"},
			func(t *testing.T, c *Config) {
				if c.Jobs[0].Dir != "/srv" {
					t.Fatalf("jobs[0].dir=%q, want /srv from SCHEDULER_DEFAULTS_DIR", c.Jobs[0].Dir)
				}
			}},
		{"KeysInAnyCase", "Node: n1\nJobs:\n  - {Name: a, Schedule: '@hourly', TYPE: sql, Sql: x, History: {Max_Runs: 3}}\n", nil,
			func(t *testing.T, c *Config) {
				if j := c.Jobs[0]; c.Node != "n1" || j.Name != "a" || j.Schedule != "@hourly" || j.SQL != "x" || j.History.MaxRuns != 3 {
					t.Fatalf("node %q, job %+v: keys in another case not read", c.Node, j.JobSpec)
				}
			}},
		// The names of env and headers mappings are no keys: a dot in one is the name's own.
		{"DottedNames", "defaults: {env: {Java.Home: /opt}, headers: {X.Trace: '1'}}\n" +
			"jobs:\n  - {name: a, schedule: '@hourly', type: exec, command: [/bin/true], env: {My.Var: x}}\n" +
			"  - {name: b, schedule: '@hourly', type: http, url: 'http://h/', headers: {X.Own: '2'}}\n", nil,
			func(t *testing.T, c *Config) {
				if want := map[string]string{"My.Var": "x"}; !reflect.DeepEqual(c.Jobs[0].Env, want) {
					t.Errorf("jobs[0].env=%v, want %v", c.Jobs[0].Env, want)
				}
				if want := map[string]string{"Java.Home": "/opt"}; !reflect.DeepEqual(c.Defaults.Env, want) {
					t.Errorf("defaults.env=%v, want %v", c.Defaults.Env, want)
				}
				if want := map[string]string{"x.trace": "1"}; !reflect.DeepEqual(c.Defaults.Headers, want) {
					t.Errorf("defaults.headers=%v, want %v", c.Defaults.Headers, want)
				}
				if want := map[string]string{"x.own": "2"}; !reflect.DeepEqual(c.Jobs[1].Headers, want) {
					t.Errorf("jobs[1].headers=%v, want %v", c.Jobs[1].Headers, want)
				}
			}},
		{"EveryLogLevel", configtest.MinimalJob, nil, func(t *testing.T, _ *Config) {
			for _, level := range []string{"debug", "info", "warn", "error"} {
				if _, err := Load(configtest.Write(t, "log: {level: "+level+"}\n"+configtest.MinimalJob), nil); err != nil {
					t.Errorf("log.level %s: %v", level, err)
				}
			}
		}},
		{"DSNPoolParameters", "store: {dsn: 'postgres://u@db/app?pool_max_conns=8&pool_max_conn_lifetime=30m', " +
			"job_dsn: 'host=db user=j pool_min_conns=1 pool_health_check_period=1m'}\n" + configtest.MinimalJob, nil, nil},
		{"EtcdAuthExternal", "single_node: true\netcd: {endpoints: ['etcd1:2379'], username: u, password: p}\n" + configtest.MinimalJob, nil, nil},
		{"VariableForParamInFile", "defaults: {params: {period: month}}\njobs:\n  - {name: a, schedule: '@daily', type: builtin, builtin: invoices}\n",
			[]string{"SCHEDULER_DEFAULTS_PARAMS_PERIOD=slot"},
			func(t *testing.T, c *Config) {
				if got := c.Jobs[0].Params["period"]; got != "slot" {
					t.Fatalf("params.period=%v, want slot from SCHEDULER_DEFAULTS_PARAMS_PERIOD", got)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(configtest.Write(t, tc.yaml), tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, cfg)
			}
		})
	}
}

// TestConfig_EveryKeyHasAVariable: each settable leaf of the Config type is accepted from the
// environment, so a key added to the type needs nothing else to be settable.
func TestConfig_EveryKeyHasAVariable(t *testing.T) {
	leaves := keypath.Leaves(reflect.TypeFor[Config]())
	if len(leaves) < 20 {
		t.Fatalf("only %d keys derived from Config: %v", len(leaves), leaves)
	}
	for _, k := range envKeys(nil) {
		if k == "jobs" || strings.HasPrefix(k, "jobs.") {
			t.Fatalf("jobs key %q derived as settable", k)
		}
	}
	var env []string
	for _, k := range leaves {
		if k != "jobs" {
			env = append(env, envName(k)+"=")
		}
	}
	if problems := unknownVariables(envMap(env), nil); len(problems) > 0 {
		t.Fatalf("variables of Config keys reported unknown: %v", problems)
	}
}

// TestConfig_JitterGapFollowsNow: the shortest gap is looked for from the instant given, so the
// check is exact in tests and stable across replicas.
func TestConfig_JitterGapFollowsNow(t *testing.T) {
	// Whenever it is read, a year holds a gap of at most 184 days (4416h).
	path := configtest.Write(t, "jobs:\n  - {name: a, schedule: '0 0 1 1,7 *', type: sql, sql: x, jitter: 4500h}\n")
	if _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), "jobs[0].jitter:") {
		t.Fatalf("4500h of jitter on two slots a year: err=%v, want jobs[0].jitter named", err)
	}
	// Read in December, the year ahead holds one gap: January to July, 181 days (4344h).
	var job Job
	job.Name, job.Schedule, job.Timezone, job.Type, job.SQL = "a", "0 0 1 1,7 *", "UTC", "sql", "x"
	job.Timeout, job.Overlap, job.Misfire, job.Jitter = time.Hour, "skip", "once", 4343*time.Hour
	var ps problems
	validateJob(&ps, "jobs[0]", job, schedule.NewCache(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
	if len(ps.list) != 0 {
		t.Fatalf("4343h below a 4344h gap refused: %v", ps.list)
	}
	job.Jitter = 4344 * time.Hour
	validateJob(&ps, "jobs[0]", job, schedule.NewCache(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
	if len(ps.list) != 1 || !strings.Contains(ps.list[0].Msg, "4344h0m0s") {
		t.Fatalf("problems=%v, want one naming the 4344h gap", ps.list)
	}
}

// TestLoad_FileLimits: only a regular file within MaxConfigBytes is read, and a refusal
// names the file and the limit.
func TestLoad_FileLimits(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("# a table\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil { // sparse: a terabyte that takes no disk
		t.Fatal(err)
	}
	f.Close()
	fifo := filepath.Join(dir, "pipe.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	limitText := fmt.Sprintf("limit of %d bytes (16 MiB)", MaxConfigBytes)
	cases := []struct {
		name, path string
		want       []string
	}{
		{"Device", "/dev/zero", []string{"/dev/zero is not a regular file (a device)"}},
		{"NamedPipe", fifo, []string{fifo + " is not a regular file (a named pipe)"}},
		{"Directory", dir, []string{dir + " is not a regular file (a directory)"}},
		// Regular files to stat, the kernel's: /proc/kmsg's reads wait or take the system
		// logger's messages; /proc/self/status changes under the reader.
		{"KernelStream", "/proc/kmsg", []string{"/proc/kmsg is a kernel file on procfs, not a file on disk"}},
		{"KernelFile", "/proc/self/status", []string{"/proc/self/status is a kernel file on procfs, not a file on disk"}},
		{"SysFile", "/sys/kernel/uevent_seqnum", []string{"/sys/kernel/uevent_seqnum is a kernel file on sysfs, not a file on disk"}},
		{"TooLarge", huge, []string{huge + " is larger than the " + limitText}},
		{"JustTooLarge", configtest.Write(t, "#"+strings.Repeat("x", MaxConfigBytes)+"\n"), []string{"larger than the " + limitText}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustLoadError(t, tc.path, nil, tc.want...)
		})
	}
	t.Run("AtTheLimit", func(t *testing.T) {
		body := configtest.MinimalJob + "#" + strings.Repeat("x", MaxConfigBytes-len(configtest.MinimalJob)-2) + "\n"
		if _, err := Load(configtest.Write(t, body), nil); err != nil {
			t.Fatalf("a file of exactly %d bytes: %v", len(body), err)
		}
	})
	t.Run("PipeInPlaceAfterTheCheck", func(t *testing.T) {
		// The file was a regular one when stat saw it; a named pipe put in its place since must
		// be refused, not waited on.
		done := make(chan error, 1)
		go func() {
			f, err := filelimit.OpenChecked(fifo, time.Second)
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), fifo+" is not a regular file (a named pipe)") {
				t.Fatalf("err=%v, want the named pipe refused", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("opening a named pipe with no writer still blocks after 10s")
		}
	})
	t.Run("ReadsAtMostOneBytePastTheLimit", func(t *testing.T) {
		r := &countingReader{r: zeroReader{}}
		if _, err := filelimit.ReadLimited(r, "stream", filelimit.Limit{Bytes: 1000, Kind: "configuration"}); err == nil || !strings.Contains(err.Error(), "stream is larger than the limit of 1000 bytes") {
			t.Fatalf("err=%v", err)
		}
		if r.n > 1001 {
			t.Fatalf("read %d bytes, want at most 1001", r.n)
		}
	})
	t.Run("TooManyJobs", func(t *testing.T) {
		// Viper reads the key in any case: so does the limit.
		for _, key := range []string{"jobs", "Jobs"} {
			var b strings.Builder
			b.WriteString(key + ":\n")
			for i := range MaxJobs + 1 {
				fmt.Fprintf(&b, "  - {name: j%d, schedule: '@daily', type: sql, sql: x}\n", i)
			}
			_, err := Load(configtest.Write(t, b.String()), nil)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("jobs: %d jobs, more than the limit of %d", MaxJobs+1, MaxJobs)) {
				t.Fatalf("%s: err=%v, want the job limit named", key, err)
			}
		}
	})
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestLoad_PathsFromConfigDir: relative paths are read from the configuration file's
// directory, not from the directory the command starts in.
func TestLoad_PathsFromConfigDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "scheduler.yaml")
	body := "data_dir: state\netcd: {tls: {ca_file: ca.pem}}\ndefaults: {type: exec}\n" +
		"jobs:\n  - {name: a, schedule: '@daily', command: [./run.sh], dir: work}\n  - {name: b, schedule: '@daily', command: [/bin/true], dir: /abs}\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // elsewhere, and the file named relative to it
	rel, err := filepath.Rel(mustGetwd(t), path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(rel, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "state"); cfg.DataDir != want {
		t.Errorf("data_dir=%q, want %q", cfg.DataDir, want)
	}
	if want := filepath.Join(dir, "ca.pem"); cfg.Etcd.TLS.CAFile != want {
		t.Errorf("etcd.tls.ca_file=%q, want %q", cfg.Etcd.TLS.CAFile, want)
	}
	if want := filepath.Join(dir, "work"); cfg.Jobs[0].Dir != want || cfg.Jobs[1].Dir != "/abs" {
		t.Errorf("dirs=%q, %q; want %q and /abs", cfg.Jobs[0].Dir, cfg.Jobs[1].Dir, want)
	}
	if cfg.Jobs[0].Command[0] != "./run.sh" {
		t.Errorf("command[0]=%q, want it as written", cfg.Jobs[0].Command[0])
	}
}

// TestLoad_SecretFilesFromConfigDir: a relative KEY_file path, written in the file or given by
// a variable, is read from the configuration file's directory, as every relative path is.
func TestLoad_SecretFilesFromConfigDir(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"dsn":      "postgres://sched:pa55@db/app\n",
		"job_dsn":  "postgres://jobs:j0bs@db/app\n",
		"etcd_pw":  "etcd-secret\n",
		"smtp_pw":  "smtp-secret\n",
		"redis_pw": "redis-secret\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "scheduler.yaml")
	body := "single_node: true\netcd: {endpoints: ['etcd1:2379'], username: u, password_file: etcd_pw}\n" +
		"store: {dsn_file: ./dsn}\noutbox: {smtp: {addr: 'mail:25', from: a@example.com, username: u, password_file: smtp_pw}}\n" +
		"redis: {password_file: redis_pw}\n" + configtest.MinimalJob
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // elsewhere, where none of the files is
	cfg, err := Load(path, []string{"SCHEDULER_STORE_JOB_DSN_FILE=job_dsn"})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{cfg.Store.DSN, cfg.Store.JobDSN, cfg.Etcd.Password, cfg.Outbox.SMTP.Password, cfg.Redis.Password}
	if want := []string{"postgres://sched:pa55@db/app", "postgres://jobs:j0bs@db/app", "etcd-secret", "smtp-secret", "redis-secret"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("secrets read %q, want %q", got, want)
	}
	// A file that is not there is named by the path read, the configuration's directory's.
	_, err = Load(path, []string{"SCHEDULER_STORE_JOB_DSN_FILE=absent"})
	if err == nil || !strings.Contains(err.Error(), "store.job_dsn_file: set by SCHEDULER_STORE_JOB_DSN_FILE: cannot read the secret") ||
		!strings.Contains(err.Error(), filepath.Join(dir, "absent")) {
		t.Fatalf("err=%v, want the missing file named by its path in %s", err, dir)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
