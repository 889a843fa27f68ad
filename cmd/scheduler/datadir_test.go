package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestLockDataDir(t *testing.T) {
	t.Run("SecondLockNamesTheHolder", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		l, err := lockDataDir(dir, "a")
		if err != nil {
			t.Fatalf("lockDataDir: %v", err)
		}
		_, err = lockDataDir(dir, "b")
		want := fmt.Sprintf("data dir %s is in use by pid %d (node a)", dir, os.Getpid())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("second lockDataDir = %v, want %q", err, want)
		}
		l.release()
		l, err = lockDataDir(dir, "b")
		if err != nil {
			t.Fatalf("lockDataDir after release: %v", err)
		}
		l.release()
	})
	t.Run("UnreadableRecord", func(t *testing.T) {
		dir := t.TempDir()
		l, err := lockDataDir(dir, "a")
		if err != nil {
			t.Fatalf("lockDataDir: %v", err)
		}
		defer l.release()
		if err := os.WriteFile(filepath.Join(dir, lockFileName), []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := lockDataDir(dir, "b"); err == nil || !strings.Contains(err.Error(), "in use by another process") {
			t.Fatalf("lockDataDir = %v, want in use by another process", err)
		}
	})
	t.Run("DataDirIsAFile", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := lockDataDir(file, "a"); err == nil || !strings.Contains(err.Error(), "data_dir "+file) {
			t.Fatalf("lockDataDir on a file = %v, want an error naming data_dir", err)
		}
	})
	t.Run("LockFileUnwritable", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, lockFileName), 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := lockDataDir(dir, "a"); err == nil || !strings.Contains(err.Error(), "lock file") {
			t.Fatalf("lockDataDir with a directory as lock file = %v, want an error", err)
		}
	})
}

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
	if err := os.WriteFile(path, []byte("data_dir: "+data+"\n"+minimalJob), 0o600); err != nil {
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
