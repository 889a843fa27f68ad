package redact

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestExposed: a world-readable file holding a secret is reported with its mode; one readable by
// its owner alone, or holding no secret, is not.
func TestExposed(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		mode os.FileMode
		text string
		want os.FileMode
	}{
		{"WorldReadable", 0o644, "dsn: postgres://u:hunter2@db/x", 0o644},
		{"OwnerOnly", 0o600, "dsn: postgres://u:hunter2@db/x", 0},
		{"NoSecret", 0o644, "dsn_file: /etc/scheduler/dsn", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".yaml")
			if err := os.WriteFile(p, []byte(tc.text), tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.mode); err != nil { // whatever the umask
				t.Fatal(err)
			}
			if got := Exposed(p, []string{"", "hunter2"}); got != tc.want {
				t.Fatalf("Exposed = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestExposed_NotARegularFile: a configuration path that became a named pipe (no writer) or a
// directory after the load read it is not waited on: Exposed returns at once, reporting nothing.
func TestExposed_NotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "scheduler.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, dir} {
		done := make(chan os.FileMode, 1)
		go func() { done <- Exposed(p, []string{"secret"}) }()
		select {
		case got := <-done:
			if got != 0 {
				t.Fatalf("Exposed(%s) = %v, want 0", p, got)
			}
		case <-time.After(30 * time.Second):
			// Unblock the open so that the goroutine ends with the test.
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			t.Fatalf("Exposed(%s) blocked on a file that is not a regular file", p)
		}
	}
}
