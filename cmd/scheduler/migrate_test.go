package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"scheduler/cmd/scheduler/internal/config/configtest"
)

// TestMigrate_SQLiteStoreIsPrivate: the SQLite store holds every run's output; created in a
// data_dir that an operator made beforehand with mode 0755, it must still be readable by its
// owner alone.
func TestMigrate_SQLiteStoreIsPrivate(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	path := filepath.Join(dir, "scheduler.yaml")
	if err := os.WriteFile(path, []byte("data_dir: "+data+"\n"+configtest.MinimalJob), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "migrate", "--config", path); code != 0 {
		t.Fatalf("migrate: exit %d %s%s", code, out, errOut)
	}
	files, err := filepath.Glob(filepath.Join(data, "scheduler.db*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no store in %s (%v)", data, err)
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", f, m)
		}
	}
	// A second migrate keeps the store as it is.
	if code, out, errOut := runCLI(t, "migrate", "--config", path); code != 0 || !strings.Contains(out+errOut, "schema is current") {
		t.Fatalf("second migrate: exit %d %s%s", code, out, errOut)
	}
}
