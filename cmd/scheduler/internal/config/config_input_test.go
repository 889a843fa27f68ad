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
		{"FileValueNotBlamedOnVariable", "election: {ttl: 500ms}\n", []string{"SCHEDULER_LOG_LEVEL=debug"}, []string{"election.ttl: must be at least 1s"}, []string{"set by", "environment"}},

		{"EndpointsWithoutSharedStore", "etcd: {endpoints: ['etcd1:2379']}\n", nil,
			[]string{"store.dsn: is empty while etcd.endpoints is set", "every replica could run every slot", "single_node: true"}, nil},
		{"EndpointsFromEnvWithoutSharedStore", "", []string{"SCHEDULER_ETCD_ENDPOINTS=etcd1:2379"}, []string{"store.dsn: is empty while etcd.endpoints is set"}, nil},
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
	leaves := configLeaves(reflect.TypeFor[Config](), "")
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
	validateJob(&ps, "jobs[0]", job, newGapCache(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
	if len(ps.list) != 0 {
		t.Fatalf("4343h below a 4344h gap refused: %v", ps.list)
	}
	job.Jitter = 4344 * time.Hour
	validateJob(&ps, "jobs[0]", job, newGapCache(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
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
		var b strings.Builder
		b.WriteString("jobs:\n")
		for i := range MaxJobs + 1 {
			fmt.Fprintf(&b, "  - {name: j%d, schedule: '@daily', type: sql, sql: x}\n", i)
		}
		_, err := Load(configtest.Write(t, b.String()), nil)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("jobs: %d jobs, more than the limit of %d", MaxJobs+1, MaxJobs)) {
			t.Fatalf("err=%v, want the job limit named", err)
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

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
