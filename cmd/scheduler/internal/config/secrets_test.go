package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/cmd/scheduler/internal/redact"
)

// externalEtcd opens a configuration whose etcd is a cluster of its own, which etcd.username and
// etcd.password need: the embedded etcd has no authentication.
const externalEtcd = "single_node: true\netcd:\n  endpoints: ['etcd1:2379']\n"

// writeSecret writes content to a file in a temp dir and returns its path.
func writeSecret(tb testing.TB, content string) string {
	tb.Helper()
	return configtest.WriteFile(tb, "secret", content)
}

func TestLoad_SecretFiles(t *testing.T) {
	const dsn = "postgres://sched:pa55@db:5432/app"
	t.Run("StoreDSNFromEnvironment", func(t *testing.T) {
		path := writeSecret(t, dsn+"\n")
		cfg, err := Load(configtest.Write(t, configtest.MinimalJob), []string{"SCHEDULER_STORE_DSN_FILE=" + path})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Store.DSN != dsn {
			t.Fatalf("store.dsn=%q, want %q (the trailing newline trimmed)", cfg.Store.DSN, dsn)
		}
	})
	t.Run("JobDSNFromEnvironment", func(t *testing.T) {
		const jobDSN = "postgres://scheduler_jobs:jobpw@db:5432/app"
		path := writeSecret(t, jobDSN+"\n")
		cfg, err := Load(configtest.Write(t, configtest.MinimalJob),
			[]string{"SCHEDULER_STORE_DSN=" + dsn, "SCHEDULER_STORE_JOB_DSN_FILE=" + path})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Store.JobDSN != jobDSN {
			t.Fatalf("store.job_dsn=%q, want %q", cfg.Store.JobDSN, jobDSN)
		}
	})
	t.Run("EtcdPasswordFromFile", func(t *testing.T) {
		path := writeSecret(t, "etcd-secret\r\n")
		cfg, err := Load(configtest.Write(t, externalEtcd+"  username: sched\n  password_file: "+path+"\n"+configtest.MinimalJob), nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Etcd.Password != "etcd-secret" {
			t.Fatalf("etcd.password=%q, want etcd-secret", cfg.Etcd.Password)
		}
	})
	t.Run("InnerWhitespaceKept", func(t *testing.T) {
		path := writeSecret(t, " two words \n")
		cfg, err := Load(configtest.Write(t, externalEtcd+"  username: sched\n  password_file: "+path+"\n"+configtest.MinimalJob), nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Etcd.Password != " two words " {
			t.Fatalf("etcd.password=%q, want %q", cfg.Etcd.Password, " two words ")
		}
	})

	bad := []struct {
		name    string
		yaml    string
		environ func(t *testing.T) []string
		key     string
		want    []string
	}{
		{
			name: "BothSet", key: "store.dsn_file", want: []string{"store.dsn and store.dsn_file are both set"},
			environ: func(t *testing.T) []string {
				return []string{"SCHEDULER_STORE_DSN=" + dsn, "SCHEDULER_STORE_DSN_FILE=" + writeSecret(t, dsn)}
			},
		},
		{
			name: "BothSetInFile", key: "etcd.password_file", want: []string{"etcd.password and etcd.password_file are both set"},
			yaml: "etcd:\n  username: u\n  password: x\n  password_file: /nonexistent/etcd\n",
		},
		{
			name: "MissingFile", key: "store.dsn_file", want: []string{"cannot read the secret", "/nonexistent/dsn"},
			environ: func(*testing.T) []string { return []string{"SCHEDULER_STORE_DSN_FILE=/nonexistent/dsn"} },
		},
		{
			name: "EmptyFile", key: "etcd.password_file", want: []string{"is empty"},
			environ: func(t *testing.T) []string { return []string{"SCHEDULER_ETCD_PASSWORD_FILE=" + writeSecret(t, "\n")} },
		},
		{
			name: "NotAPath", key: "store.dsn_file", want: []string{"must be a file path"},
			yaml: "store:\n  dsn_file: [a, b]\n",
		},
		{
			// Read to its end, a device would fill the memory.
			name: "Device", key: "store.dsn_file", want: []string{"/dev/zero is not a regular file (a device)"},
			environ: func(*testing.T) []string { return []string{"SCHEDULER_STORE_DSN_FILE=/dev/zero"} },
		},
		{
			// Opened for reading, a named pipe with no writer would block for ever.
			name: "NamedPipe", key: "etcd.password_file", want: []string{"is not a regular file (a named pipe)"},
			environ: func(t *testing.T) []string {
				fifo := filepath.Join(t.TempDir(), "password")
				if err := syscall.Mkfifo(fifo, 0o600); err != nil {
					t.Fatal(err)
				}
				return []string{"SCHEDULER_ETCD_PASSWORD_FILE=" + fifo}
			},
		},
		{
			name: "TooLarge", key: "etcd.password_file", want: []string{"is larger than the limit of 65536 bytes (64 KiB) for a secret file"},
			environ: func(t *testing.T) []string {
				return []string{"SCHEDULER_ETCD_PASSWORD_FILE=" + writeSecret(t, strings.Repeat("x", MaxSecretBytes+1))}
			},
		},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			var environ []string
			if tc.environ != nil {
				environ = tc.environ(t)
			}
			path := configtest.Write(t, tc.yaml+configtest.MinimalJob)
			done := make(chan error, 1)
			go func() {
				_, err := Load(path, environ)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("Load still reading the secret file after 10s")
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err=%v, want a *Error", err)
			}
			var found *Problem
			for i, p := range ce.Problems {
				if p.Key == tc.key {
					found = &ce.Problems[i]
				}
			}
			if found == nil {
				t.Fatalf("no problem at %s in %v", tc.key, ce.Problems)
			}
			for _, w := range tc.want {
				if !strings.Contains(found.Msg, w) {
					t.Fatalf("%s: %q, want it to contain %q", tc.key, found.Msg, w)
				}
			}
			if strings.Contains(err.Error(), "pa55") {
				t.Fatalf("the error quotes the secret: %v", err)
			}
		})
	}
}

func TestConfig_Secrets(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"None", Config{}, nil},
		{"DSNWithoutPassword", Config{Store: StoreConfig{DSN: "postgres://sched@db/app"}}, nil},
		{"URL", Config{Store: StoreConfig{DSN: "postgres://sched:p%40ss@db/app"}},
			[]string{"postgres://sched:p%40ss@db/app", "p@ss", "p%40ss"}},
		{"URLQuery", Config{Store: StoreConfig{DSN: "postgres://db/app?user=u&password=qpass"}},
			[]string{"postgres://db/app?user=u&password=qpass", "qpass"}},
		{"KeyValue", Config{Store: StoreConfig{DSN: `host=db password='it\'s me' user=u`}},
			[]string{`host=db password='it\'s me' user=u`, `'it\'s me'`, "it's me"}},
		{"KeyValuePlain", Config{Store: StoreConfig{DSN: "host=db password=plain user=u"}},
			[]string{"host=db password=plain user=u", "plain"}},
		{"Etcd", Config{Etcd: EtcdConfig{Password: "etcdpw"}}, []string{"etcdpw"}},
		{"JobDSN", Config{Store: StoreConfig{JobDSN: "postgres://scheduler_jobs:jobpw@db/app"}},
			[]string{"postgres://scheduler_jobs:jobpw@db/app", "jobpw"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.cfg.Secrets()
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("secrets=%q, want %q", got, tc.want)
			}
		})
	}
}

func TestScrubber(t *testing.T) {
	if redact.Scrubber(nil) != nil {
		t.Fatal("a scrubber without secrets, want nil")
	}
	cfg := Config{Store: StoreConfig{DSN: "postgres://sched:pa55@db/app"}, Etcd: EtcdConfig{Password: "etcdpw"}}
	scrub := redact.Scrubber(cfg.Secrets())
	in := "SCHEDULER_STORE_DSN=postgres://sched:pa55@db/app\nSCHEDULER_ETCD_PASSWORD=etcdpw\npassword pa55 again"
	got := scrub(in)
	want := "SCHEDULER_STORE_DSN=[redacted]\nSCHEDULER_ETCD_PASSWORD=[redacted]\npassword [redacted] again"
	if got != want {
		t.Fatalf("scrub=%q, want %q", got, want)
	}
	if !slices.Contains(cfg.Secrets(), "pa55") {
		t.Fatalf("the DSN's password is not among the secrets")
	}
}
