package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"scheduler/cmd/scheduler/internal/config/configtest"
)

func TestLoad_Sample(t *testing.T) {
	cfg, err := Load(filepath.Join("..", "..", "..", "..", "configs", "scheduler.yaml"), nil)
	if err != nil {
		t.Fatalf("the sample config must load: %v", err)
	}
	var names []string
	for _, j := range cfg.Jobs {
		names = append(names, j.Name)
	}
	if want := []string{"invoices", "stock", "heartbeat"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("jobs=%v, want %v", names, want)
	}
	inv := cfg.Jobs[0]
	if inv.Schedule != "0 2 * * *" || inv.Timezone != "Europe/Berlin" || inv.Builtin != "invoices" ||
		inv.Timeout != 2*time.Hour || inv.Retries != 3 || inv.Catchup != 6*time.Hour {
		t.Fatalf("invoices job decoded as %+v", inv.JobSpec)
	}
	beat := cfg.Jobs[2]
	if beat.Timezone != "UTC" || beat.Overlap != "skip" || beat.Misfire != "skip" || !beat.Enabled {
		t.Fatalf("heartbeat did not get the defaults: %+v", beat.JobSpec)
	}
	if cfg.Election.TTL != 5*time.Second || cfg.Store.Schema != "scheduler" || cfg.HTTP.Addr != "127.0.0.1:8080" {
		t.Fatalf("top-level values: %+v", cfg)
	}
}

// TestConfig_SampleHasEveryKey keeps the annotated sample in step with the Config type: every
// default setting must appear in it.
func TestConfig_SampleHasEveryKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "configs", "scheduler.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for key := range defaultSettings() {
		leaf := key[strings.LastIndex(key, ".")+1:]
		if !strings.Contains(string(data), leaf+":") {
			t.Errorf("configs/scheduler.yaml does not document %s", key)
		}
	}
}

func TestLoad_Defaults(t *testing.T) {
	path := configtest.Write(t, configtest.MinimalJob)
	cfg, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Node == "" {
		t.Fatal("node should default to the hostname")
	}
	want := Config{
		Node: cfg.Node, DataDir: filepath.Join(filepath.Dir(path), "data"), // next to the file
		Etcd:          EtcdConfig{Endpoints: []string{}, DialTimeout: 5 * time.Second},
		Election:      ElectionConfig{Backend: "etcd", Prefix: "/scheduler/election", TTL: 5 * time.Second},
		ZooKeeper:     ZooKeeperConfig{Servers: []string{}, SessionTimeout: 5 * time.Second, Path: "/scheduler/election"},
		Redis:         RedisConfig{Key: "scheduler:leader"},
		Store:         StoreConfig{Schema: "scheduler"},
		HTTP:          HTTPConfig{Addr: "127.0.0.1:8080"},
		Metrics:       MetricsConfig{PerJob: "auto"},
		Log:           LogConfig{Level: "info", Format: "auto"},
		ShutdownGrace: 30 * time.Second,
		History: HistoryConfig{JobHistory: JobHistory{MaxAge: 2160 * time.Hour, MaxRuns: 10000},
			PruneInterval: 10 * time.Minute, PruneBatch: 500, PrunePause: 200 * time.Millisecond},
		Outbox: OutboxConfig{SMTP: OutboxSMTPConfig{TLS: "starttls"}, MaxAttempts: 10, RetryBackoff: 30 * time.Second, Batch: 100,
			Webhook: OutboxWebhookConfig{Hosts: []string{}}},
	}
	got := *cfg
	got.Defaults, got.Jobs, got.historyFromTop = JobSpec{}, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", got, want)
	}
	j := cfg.Jobs[0]
	if j.Timeout != time.Hour || j.RetryBackoff != 10*time.Second || j.Catchup != time.Hour ||
		j.Overlap != "skip" || j.Misfire != "once" || j.Method != "POST" || !j.Enabled {
		t.Fatalf("job defaults: %+v", j.JobSpec)
	}
}

// TestLoad_EmptyValueIsUnset: a key given no value (`enabled:` and nothing after it) is not
// set, in a job as under defaults and at the top level: the job keeps what it would inherit,
// not the zero value (a job disabled, no catch-up, no retry backoff).
func TestLoad_EmptyValueIsUnset(t *testing.T) {
	const empty = "    enabled:\n    catchup:\n    retry_backoff:\n    timeout:\n    overlap:\n    history: {max_age: , max_runs: }\n"
	for _, tc := range []struct {
		name, yaml string
		want       JobSpec
	}{
		{"BuiltInDefaults", configtest.MinimalJob + empty,
			JobSpec{Enabled: true, Catchup: time.Hour, RetryBackoff: 10 * time.Second, Timeout: time.Hour, Overlap: "skip",
				History: JobHistory{MaxAge: 2160 * time.Hour, MaxRuns: 10000}}},
		{"FromDefaults", "history: {max_runs: 5}\ndefaults: {enabled: false, catchup: 5m, retry_backoff: 1s, timeout: 2m, overlap: queue, history: {max_age: 1h}}\n" +
			configtest.MinimalJob + empty,
			JobSpec{Enabled: false, Catchup: 5 * time.Minute, RetryBackoff: time.Second, Timeout: 2 * time.Minute, Overlap: "queue",
				History: JobHistory{MaxAge: time.Hour, MaxRuns: 5}}},
		{"EmptyUnderDefaultsToo", "defaults: {enabled: , catchup: }\n" + configtest.MinimalJob + empty,
			JobSpec{Enabled: true, Catchup: time.Hour, RetryBackoff: 10 * time.Second, Timeout: time.Hour, Overlap: "skip",
				History: JobHistory{MaxAge: 2160 * time.Hour, MaxRuns: 10000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(configtest.Write(t, tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			j := cfg.Jobs[0].JobSpec
			got := JobSpec{Enabled: j.Enabled, Catchup: j.Catchup, RetryBackoff: j.RetryBackoff, Timeout: j.Timeout, Overlap: j.Overlap, History: j.History}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("job decoded as\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
}

// TestLoad_SameProblemsOnEveryRead: keys that differ only in case once made each read keep
// either value, so that validate, run and each reload could read the file differently.
func TestLoad_SameProblemsOnEveryRead(t *testing.T) {
	path := configtest.Write(t, "node: a\nNode: b\nstore: {schema: a, SCHEMA: b}\njobs:\n  - name: beat\n    type: exec\n    command: [/bin/true]\n"+
		"    schedule: '@every 5s'\n    Schedule: '@every 7s'\n    SCHEDULE: 'bad'\n    Retries: -1\n    retries: 2\n"+
		"    env: {FOO: \"x\\0\", foo: y}\n")
	first := mustLoadError(t, path, nil, `store.schema: "SCHEMA" and "schema" differ only in case`, `node: "Node" and "node"`,
		`jobs[0].schedule: "SCHEDULE", "Schedule" and "schedule"`, `jobs[0].retries: "Retries" and "retries"`,
		"jobs[0].env: FOO and foo differ only in case").Error()
	for range 20 {
		if _, err := Load(path, nil); err == nil || err.Error() != first {
			t.Fatalf("a read found\n%v\nanother\n%v", err, first)
		}
	}
}

func TestLoad_Environment(t *testing.T) {
	env := []string{
		"SCHEDULER_ETCD_ENDPOINTS=etcd1:2379, etcd2:2379,etcd3:2379",
		"SCHEDULER_STORE_DSN=postgres://sched:secret@db:5432/app",
		"SCHEDULER_ELECTION_TTL=10s",
		"SCHEDULER_NODE=node-a",
		"SCHEDULER_DEFAULTS_RETRIES=4",
		"SCHEDULER_DEFAULTS_ENABLED=false",
		"SCHEDULER_ETCD_TLS_CA_FILE=",
		"OTHER_VAR=ignored",
	}
	cfg, err := Load(configtest.Write(t, "node: from-file\n"+configtest.MinimalJob), env)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"etcd1:2379", "etcd2:2379", "etcd3:2379"}; !reflect.DeepEqual(cfg.Etcd.Endpoints, want) {
		t.Errorf("endpoints=%q, want %q", cfg.Etcd.Endpoints, want)
	}
	if cfg.Store.DSN != "postgres://sched:secret@db:5432/app" || cfg.Election.TTL != 10*time.Second || cfg.Node != "node-a" {
		t.Errorf("env overrides not applied: %+v", cfg)
	}
	if cfg.Jobs[0].Retries != 4 || cfg.Jobs[0].Enabled {
		t.Errorf("env defaults not inherited by the job: %+v", cfg.Jobs[0].JobSpec)
	}
}

func TestLoad_Invalid(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		env  []string
		want []string // substrings, each must appear in the error
	}{
		{"YAMLSyntax", "node: a\nhttp:\n  addr: [x\n", nil, []string{"line 2"}},
		{"YAMLTab", "node: a\n\tdata_dir: b\n", nil, []string{"line 2", "tab"}},
		{"DuplicateYAMLKey", "node: a\nnode: b\n", nil, []string{"already defined"}},
		{"NotAMapping", "- a\n- b\n", nil, []string{"must be a mapping"}},
		{"UnknownTopKey", "nodes: a\n", nil, []string{"nodes: unknown key"}},
		{"UnknownNestedKey", "etcd:\n  endpoint: [a:1]\n", nil, []string{"etcd.endpoint: unknown key"}},
		{"UnknownJobKey", configtest.MinimalJob + "    retry: 3\n", nil, []string{"jobs[0].retry: unknown key"}},
		{"UnknownDefaultsKey", "defaults:\n  colour: red\n" + configtest.MinimalJob, nil, []string{"defaults.colour: unknown key"}},
		{"TTLTooShort", "election:\n  ttl: 500ms\n", nil, []string{"election.ttl: must be at least 1s"}},
		{"TTLFraction", "election:\n  ttl: 1500ms\n", nil, []string{"election.ttl: must be a whole number of seconds"}},
		{"DurationNoUnit", "shutdown_grace: 30\n", nil, []string{"shutdown_grace:", "no unit"}},
		{"DurationGarbage", "etcd:\n  dial_timeout: soon\n", nil, []string{"etcd.dial_timeout:", `"soon" is not a duration`}},
		{"NegativeGrace", "shutdown_grace: -1s\n", nil, []string{"shutdown_grace: must not be negative"}},
		{"BadEnvDuration", "", []string{"SCHEDULER_ELECTION_TTL=forever"}, []string{"election.ttl:", `"forever"`}},
		{"BadLogFormat", "log:\n  format: xml\n", nil, []string{"log.format: must be one of json, console"}},
		{"BadLogLevel", "log:\n  level: loud\n", nil, []string{"log.level:"}},
		{"BadSchema", "store:\n  schema: Bad-Name\n", nil, []string{"store.schema:"}},
		{"SystemSchema", "store:\n  schema: pg_catalog\n", nil, []string{"store.schema: pg_catalog: names beginning pg_ are PostgreSQL's own"}},
		{"ReservedSchema", "store:\n  schema: pg_x\n", nil, []string{"store.schema: pg_x: names beginning pg_"}},
		{"BadDSN", "store:\n  dsn: 'postgres://u:hunter2@host:notaport/db'\n", nil, []string{"store.dsn:"}},
		{"BadEndpoint", "etcd:\n  endpoints: [localhost]\n", nil, []string{"etcd.endpoints[0]:"}},
		{"BadPrefix", "election:\n  prefix: scheduler/\n", nil, []string{"election.prefix:"}},
		{"BadHTTPAddr", "http:\n  addr: localhost\n", nil, []string{"http.addr:"}},
		{"HalfTLS", "etcd:\n  tls:\n    cert_file: /nonexistent/c.pem\n", nil, []string{"etcd.tls: cert_file and key_file", "etcd.tls.cert_file: cannot read"}},
		{"JobNameMissing", "jobs:\n  - schedule: '@hourly'\n    type: sql\n    sql: select 1\n", nil, []string{"jobs[0].name: is required"}},
		{"JobNameInvalid", "jobs:\n  - name: Bad Name\n    schedule: '@hourly'\n    type: sql\n    sql: select 1\n", nil, []string{"jobs[0].name: must match"}},
		{"JobNameDuplicate", configtest.MinimalJob + "  - name: beat\n    schedule: '@hourly'\n    type: sql\n    sql: select 1\n", nil, []string{"jobs[1].name: duplicate job name \"beat\""}},
		{"ScheduleFields", "jobs:\n  - name: a\n    schedule: '* * *'\n    type: sql\n    sql: select 1\n", nil, []string{"jobs[0].schedule:"}},
		{"ScheduleRange", "jobs:\n  - name: a\n    schedule: '0 25 * * *'\n    type: sql\n    sql: select 1\n", nil, []string{"jobs[0].schedule:", "25"}},
		{"ScheduleMissing", "jobs:\n  - name: a\n    type: sql\n    sql: select 1\n", nil, []string{"jobs[0].schedule: is required"}},
		{"BadTimezone", "jobs:\n  - name: a\n    schedule: '@daily'\n    timezone: Mars/Olympus\n    type: sql\n    sql: select 1\n", nil, []string{"jobs[0].timezone: unknown IANA time zone \"Mars/Olympus\""}},
		{"LocalTimezone", "jobs:\n  - name: a\n    schedule: '@daily'\n    timezone: Local\n    type: sql\n    sql: select 1\n", nil, []string{"jobs[0].timezone:"}},
		// Names LoadLocation takes that differ from host to host, or count leap seconds.
		{"LocaltimeTimezone", "jobs:\n  - name: a\n    schedule: '@daily'\n    timezone: localtime\n    type: sql\n    sql: select 1\n", nil, []string{"jobs[0].timezone: must name an IANA zone such as Europe/Berlin: localtime differs from host to host"}},
		{"PosixrulesTimezone", "jobs:\n  - name: a\n    schedule: '@daily'\n    timezone: posixrules\n    type: sql\n    sql: select 1\n", nil, []string{"jobs[0].timezone: must name an IANA zone such as Europe/Berlin: posixrules differs"}},
		{"DottedTimezone", "jobs:\n  - name: a\n    schedule: '@daily'\n    timezone: ./localtime\n    type: sql\n    sql: select 1\n", nil, []string{"jobs[0].timezone: must name an IANA zone such as Europe/Berlin: ./localtime is not written as a zone's name (localtime)"}},
		{"LeapSecondTimezone", "jobs:\n  - name: a\n    schedule: '@daily'\n    timezone: right/America/New_York\n    type: sql\n    sql: select 1\n", nil, []string{"jobs[0].timezone: must name an IANA zone such as Europe/Berlin: right/America/New_York counts leap seconds"}},
		{"LocaltimeDefaultTimezone", "defaults:\n  timezone: localtime\n" + configtest.MinimalJob, nil, []string{"defaults.timezone: unknown IANA time zone \"localtime\""}},
		{"BadDefaultTimezone", "defaults:\n  timezone: Nowhere/City\n" + configtest.MinimalJob, nil, []string{"defaults.timezone: unknown IANA time zone"}},
		{"UnknownType", "jobs:\n  - name: a\n    schedule: '@daily'\n    type: shell\n", nil, []string{"jobs[0].type: must be one of builtin, exec, sql, http"}},
		{"TypeMissing", "jobs:\n  - name: a\n    schedule: '@daily'\n", nil, []string{"jobs[0].type: is required"}},
		{"ExecNoCommand", "jobs:\n  - name: a\n    schedule: '@daily'\n    type: exec\n", nil, []string{"jobs[0].command: is required"}},
		{"ExecCommandString", "jobs:\n  - name: a\n    schedule: '@daily'\n    type: exec\n    command: echo hi\n", nil, []string{"jobs[0].command"}},
		{"SQLNoSQL", "jobs:\n  - name: a\n    schedule: '@daily'\n    type: sql\n", nil, []string{"jobs[0].sql: is required"}},
		{"HTTPNoURL", "jobs:\n  - name: a\n    schedule: '@daily'\n    type: http\n", nil, []string{"jobs[0].url: is required"}},
		{"HTTPBadURL", "jobs:\n  - name: a\n    schedule: '@daily'\n    type: http\n    url: ftp://x\n", nil, []string{"jobs[0].url: must be an absolute http"}},
		{"HTTPBadMethod", "jobs:\n  - name: a\n    schedule: '@daily'\n    type: http\n    url: http://x/\n    method: FETCH\n", nil, []string{"jobs[0].method: must be one of"}},
		{"ForeignTypeKey", "jobs:\n  - name: a\n    schedule: '@daily'\n    type: sql\n    sql: select 1\n    command: [ls]\n", nil, []string{"jobs[0].command: only applies to jobs of type exec"}},
		{"BuiltinMissing", "jobs:\n  - name: a\n    schedule: '@daily'\n    type: builtin\n", nil, []string{"jobs[0].builtin: is required"}},
		{"BuiltinUnknown", "jobs:\n  - name: a\n    schedule: '@daily'\n    type: builtin\n    builtin: payroll\n", nil, []string{"jobs[0].builtin: unknown builtin \"payroll\""}},
		{"BuiltinBadParams", "jobs:\n  - name: a\n    schedule: '@daily'\n    type: builtin\n    builtin: invoices\n    params: {clients: -1, delay: fast, period: week, colour: red}\n", nil,
			[]string{"jobs[0].params.clients:", "jobs[0].params.delay:", "jobs[0].params.period: must be month or slot", "jobs[0].params.colour: unknown parameter"}},
		{"NegativeRetries", configtest.MinimalJob + "    retries: -1\n", nil, []string{"jobs[0].retries: must be from 0 to 1000, got -1"}},
		{"RetriesNotNumber", configtest.MinimalJob + "    retries: many\n", nil, []string{"jobs[0].retries:", "not a whole number"}},
		{"NegativeCatchup", configtest.MinimalJob + "    catchup: -5m\n", nil, []string{"jobs[0].catchup: must not be negative"}},
		{"ZeroTimeout", configtest.MinimalJob + "    timeout: 0s\n", nil, []string{"jobs[0].timeout: must be positive"}},
		{"NegativeJitter", configtest.MinimalJob + "    jitter: -1s\n", nil, []string{"jobs[0].jitter: must not be negative"}},
		{"BadOverlap", configtest.MinimalJob + "    overlap: sometimes\n", nil, []string{"jobs[0].overlap: must be one of skip, queue, replace, allow"}},
		{"BadMisfire", configtest.MinimalJob + "    misfire: never\n", nil, []string{"jobs[0].misfire: must be one of skip, once, all"}},
		{"BadDefaultOverlap", "defaults:\n  overlap: twice\n" + configtest.MinimalJob, nil, []string{"defaults.overlap: must be one of"}},
		{"EmptyJobEntry", "jobs:\n  -\n", nil, []string{"jobs[0]"}},
		{"JobsNotAList", "jobs: {name: a}\n", nil, []string{"jobs:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(configtest.Write(t, tc.yaml), tc.env)
			if err == nil {
				t.Fatal("Load accepted an invalid config")
			}
			ce, ok := err.(*Error)
			if !ok {
				t.Fatalf("error is %T, want *Error: %v", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(ce.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, ce)
				}
			}
			if strings.Contains(ce.Error(), "hunter2") {
				t.Errorf("error leaks a password:\n%v", ce)
			}
		})
	}
}

// TestLoad_ReportsEveryProblem checks that one file with several mistakes gets them all.
func TestLoad_ReportsEveryProblem(t *testing.T) {
	body := `
election: {ttl: 0s}
log: {format: xml}
jobs:
  - name: a
    schedule: "0 25 * * *"
    type: exec
    command: [/bin/true]
  - name: a
    schedule: "@daily"
    timezone: Nowhere/Town
    type: sql
    sql: select 1
    misfire: later
`
	_, err := Load(configtest.Write(t, body), nil)
	ce, ok := err.(*Error)
	if !ok {
		t.Fatalf("err=%v, want *Error", err)
	}
	keys := map[string]bool{}
	for _, p := range ce.Problems {
		keys[p.Key] = true
	}
	for _, k := range []string{"election.ttl", "log.format", "jobs[0].schedule", "jobs[1].name", "jobs[1].timezone", "jobs[1].misfire"} {
		if !keys[k] {
			t.Errorf("no problem reported for %s; got:\n%v", k, ce)
		}
	}
}

func TestLoad_MissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "absent.yaml"), nil)
	if ce, ok := err.(*Error); !ok || !strings.Contains(ce.Error(), "not found") {
		t.Fatalf("err=%v, want a Error saying the file is not found", err)
	}
}

// FuzzLoad feeds arbitrary documents to the loader: it must return a config or an error,
// never panic.
func FuzzLoad(f *testing.F) {
	sample, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "configs", "scheduler.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(sample))
	f.Add(configtest.MinimalJob)
	f.Add("jobs:\n  - name: x\n    schedule: '*/5 * * * * *'\n    type: http\n    url: http://a/\n")
	f.Add("defaults: {timeout: 3}\njobs: [{name: a, schedule: '@every 1s', type: sql, sql: x}]\n")
	f.Add("election: {ttl: 1e9}\netcd: {endpoints: 7}\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, doc string) {
		path := filepath.Join(dir, "fuzz.yaml")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var cfg *Config
		var err error
		go func() {
			defer close(done)
			cfg, err = Load(path, nil)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second): // a hang detector, not a timing assertion
			t.Fatalf("Load did not return for:\n%s", doc)
		}
		if (cfg == nil) == (err == nil) {
			t.Fatalf("cfg=%v err=%v: exactly one must be set", cfg, err)
		}
	})
}
