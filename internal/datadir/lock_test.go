package datadir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAcquire(t *testing.T) {
	t.Run("SecondLockNamesTheHolder", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		l, err := Acquire(dir, "a")
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		_, err = Acquire(dir, "b")
		want := fmt.Sprintf("data dir %s is in use by pid %d (node a)", dir, os.Getpid())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("second Acquire = %v, want %q", err, want)
		}
		l.Release()
		l, err = Acquire(dir, "b")
		if err != nil {
			t.Fatalf("Acquire after release: %v", err)
		}
		l.Release()
	})
	t.Run("UnreadableRecord", func(t *testing.T) {
		dir := t.TempDir()
		l, err := Acquire(dir, "a")
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		defer l.Release()
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Acquire(dir, "b"); err == nil || !strings.Contains(err.Error(), "in use by another process") {
			t.Fatalf("Acquire = %v, want in use by another process", err)
		}
	})
	t.Run("DataDirIsAFile", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Acquire(file, "a"); err == nil || !strings.Contains(err.Error(), "data_dir "+file) {
			t.Fatalf("Acquire on a file = %v, want an error naming data_dir", err)
		}
	})
	t.Run("LockFileUnwritable", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, FileName), 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := Acquire(dir, "a"); err == nil || !strings.Contains(err.Error(), "lock file") {
			t.Fatalf("Acquire with a directory as lock file = %v, want an error", err)
		}
	})
}
