package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/internal/fence"
	"scheduler/internal/kinds"
	"scheduler/internal/testenv"
)

// TestCLI_BadInput: each kind of bad input ends `validate` with status 2 and a message naming
// the key, variable or file.
func TestCLI_BadInput(t *testing.T) {
	huge := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(huge, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 64<<30); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		env  []string
		path string
		want []string
	}{
		{"PortOutOfRange", nil, configtest.Write(t, "http: {addr: 'localhost:99999'}\n"+configtest.MinimalJob), []string{"http.addr:", "99999", "out of range"}},
		{"DevZero", nil, "/dev/zero", []string{"/dev/zero is not a regular file"}},
		{"HugeFile", nil, huge, []string{huge, "larger than the limit of 16777216 bytes (16 MiB)"}},
		{"JitterNeverFires", nil, configtest.Write(t, configtest.MinimalJob+"    jitter: 1000000h\n"), []string{"jobs[0].jitter:", "1000000h0m0s", "10s"}},
		{"VariableTypo", []string{"SCHEDULER_ELECTON_TTL=10s"}, configtest.Write(t, configtest.MinimalJob), []string{"SCHEDULER_ELECTON_TTL", "did you mean SCHEDULER_ELECTION_TTL?"}},
		{"VariableBadValue", []string{"SCHEDULER_ELECTION_TTL=10"}, configtest.Write(t, configtest.MinimalJob), []string{"set by SCHEDULER_ELECTION_TTL"}},
		{"VariableForJobs", []string{"SCHEDULER_JOBS_0_SCHEDULE=@daily"}, configtest.Write(t, configtest.MinimalJob), []string{"SCHEDULER_JOBS_0_SCHEDULE: jobs cannot be set from the environment"}},
		{"EtcdWithoutSharedStore", nil, configtest.Write(t, "etcd: {endpoints: ['etcd1:2379']}\n"+configtest.MinimalJob), []string{"store.dsn:", "single_node: true"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLIEnv(t, tc.env, "validate", "--config", tc.path)
			if code != 2 {
				t.Fatalf("exit %d, want 2; out=%q err=%q", code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr does not say %q:\n%s", w, errOut)
				}
			}
		})
	}
	// A node name the registry refuses was taken by `validate` (from the file or a variable) and
	// by `run --node` (never checked): the daemon then failed its registration every second.
	t.Run("NodeFlag", func(t *testing.T) {
		path := configtest.Write(t, "data_dir: "+t.TempDir()+"\nhttp: {addr: ''}\n"+configtest.MinimalJob)
		for _, node := range []string{"a\x01b", strings.Repeat("n", 254)} {
			code, out, errOut := runCLIEnv(t, nil, "run", "--config", path, "--node", node)
			if code != 2 || !strings.Contains(errOut, "--node: ") {
				t.Errorf("run --node %.20q: exit %d, want 2 naming --node; out=%q err=%.500q", node, code, out, errOut)
			}
		}
	})
	t.Run("RunVariablesAreNotErrors", func(t *testing.T) {
		env := []string{kinds.EnvFenceToken + "=42", kinds.EnvJob + "=beat", kinds.EnvScheduledAt + "=2026-03-01T00:00:00Z", kinds.EnvRunID + "=9", kinds.EnvAttempt + "=1", kinds.EnvRunSecret + "=00ff"}
		if code, out, errOut := runCLIEnv(t, env, "validate", "--config", configtest.Write(t, configtest.MinimalJob)); code != 0 {
			t.Fatalf("exit %d: %s%s", code, out, errOut)
		}
	})
}

// TestCLI_NextPrintsDates: `next` prints each slot and its jittered firing with the date, so a
// jitter that carries a slot past midnight shows.
func TestCLI_NextPrintsDates(t *testing.T) {
	path := configtest.Write(t, "jobs:\n  - {name: nightly, schedule: '30 23 * * *', timezone: Europe/Berlin, type: sql, sql: x, jitter: 22h}\n")
	code, out, errOut := runCLI(t, "next", "nightly", "-n", "3", "--from", "2026-03-28T00:00:00Z", "--config", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a header and 3 slots:\n%s", out)
	}
	// The slot of the 28th (CET) fires, jittered, on the 28th or the 29th (CEST): a date either way.
	first := lines[1]
	if !strings.HasPrefix(first, "2026-03-28 23:30:00 +01:00 CET") {
		t.Fatalf("slot line %q", first)
	}
	_, fires, ok := strings.Cut(first, "fires at ")
	if !ok {
		t.Fatalf("no jittered firing in %q", first)
	}
	when, err := time.Parse("2006-01-02 15:04:05.000 -07:00 MST", strings.TrimSuffix(fires, " (jitter)"))
	if err != nil {
		t.Fatalf("firing %q is not a full date and time: %v", fires, err)
	}
	slot := time.Date(2026, 3, 28, 22, 30, 0, 0, time.UTC)
	if d := when.Sub(slot); d < 0 || d >= 22*time.Hour {
		t.Fatalf("fires %s after the slot, want within [0, 22h)", d)
	}
	if !strings.Contains(lines[2], "+02:00 CEST") {
		t.Fatalf("the slot after the DST change lost its offset: %q", lines[2])
	}
}

// TestCLI_HistoryOnUnmigratedStore: history on a Postgres database, or an SQLite file, that
// `migrate` never ran on says to run it, instead of the store's missing-table error.
func TestCLI_HistoryOnUnmigratedStore(t *testing.T) {
	sqlite := t.TempDir()
	if err := os.WriteFile(filepath.Join(sqlite, "scheduler.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, keys := range map[string]string{
		"Postgres": fmt.Sprintf("store: {dsn: %q}\n", testenv.MustDatabase(t)),
		"SQLite":   fmt.Sprintf("data_dir: %q\n", sqlite),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "scheduler.yaml")
			if err := os.WriteFile(path, []byte(keys+configtest.MinimalJob), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCLI(t, "history", "beat", "--config", path)
			if code != 1 || !strings.Contains(errOut, "run `scheduler migrate` first") {
				t.Fatalf("exit %d, want 1 saying to run migrate:\n%s%s", code, out, errOut)
			}
		})
	}
}

// TestCLI_NoStoreIsNotCreated: a command other than migrate, pointed at a data_dir without a
// store, says so and leaves nothing behind; relative data_dir is read from the config file's
// directory, so the commands find the store from any directory.
func TestCLI_NoStoreIsNotCreated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "scheduler.yaml")
	if err := os.WriteFile(path, []byte("data_dir: data\n"+configtest.MinimalJob), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	code, out, errOut := runCLI(t, "history", "beat", "--config", "../scheduler.yaml")
	if code != 1 || !strings.Contains(errOut, "no store at "+filepath.Join(dir, "data", "scheduler.db")) || !strings.Contains(errOut, "scheduler migrate") {
		t.Fatalf("exit %d, want 1 naming the missing store and migrate:\n%s%s", code, out, errOut)
	}
	for _, p := range []string{filepath.Join(dir, "data"), filepath.Join(sub, "data")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s exists after history (err %v): a read command created a store", p, err)
		}
	}
	// migrate creates it next to the file; history from the subdirectory then reads it.
	if code, out, errOut := runCLI(t, "migrate", "--config", "../scheduler.yaml"); code != 0 {
		t.Fatalf("migrate: exit %d %s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "scheduler.db")); err != nil {
		t.Fatalf("migrate did not create the store next to the config: %v", err)
	}
	if code, out, errOut := runCLI(t, "history", "beat", "--config", "../scheduler.yaml"); code != 0 || !strings.HasPrefix(out, "SLOT") {
		t.Fatalf("history after migrate: exit %d %s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(sub, "data")); !os.IsNotExist(err) {
		t.Fatalf("a data directory appeared in the working directory (err %v)", err)
	}
}

// TestOutput_FitsTheLedger: the excerpt the jobs keep of a run's output, marker included, is
// within what the ledger stores, so the store does not cut it again and history shows the
// head, the marker and the tail as captured.
func TestOutput_FitsTheLedger(t *testing.T) {
	out := kinds.Excerpt(strings.Repeat("ü", 1<<20)+"THE END", 0)
	if n := utf8.RuneCountInString(out); n > fence.MaxExcerpt {
		t.Fatalf("excerpt has %d characters, the ledger keeps %d", n, fence.MaxExcerpt)
	}
	if !strings.Contains(out, " bytes omitted ...]\n") || !strings.HasSuffix(out, "THE END") {
		t.Fatalf("excerpt lacks the marker or the tail: ...%q", out[len(out)-60:])
	}
}

// TestCLI_StoreUnreadable: a store path that cannot even be looked at (data_dir is a file) is a
// runtime failure naming the path, and nothing is created in its place.
func TestCLI_StoreUnreadable(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "scheduler.yaml")
	if err := os.WriteFile(path, []byte("data_dir: data\n"+configtest.MinimalJob), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "history", "beat", "--config", path)
	if code != 1 || !strings.Contains(errOut, "store "+filepath.Join(dir, "data", "scheduler.db")) || !strings.Contains(errOut, "not a directory") {
		t.Fatalf("exit %d, want 1 naming the store path and the cause:\n%s%s", code, out, errOut)
	}
}
