package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
