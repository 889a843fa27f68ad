package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"scheduler"
)

// TestDaemon_JobsDoNotInheritItsFiles starts the daemon holding a file open across exec, as a
// shell's redirection or a supervisor leaves one: an exec job, which could read or write it
// whatever its own rights, must find only its standard streams open.
func TestDaemon_JobsDoNotInheritItsFiles(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "held-by-the-launcher"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, "", `
  - name: fds
    schedule: "* * * * * *"
    type: exec
    command: [sh, -c, 'for f in /proc/self/fd/*; do echo "$f $(readlink "$f")"; done']
    misfire: skip
`)
	c.start("a")
	var run scheduler.Run
	c.wait("a finished run of fds", func() bool {
		for _, r := range c.history("fds") {
			if r.Status == scheduler.StatusSucceeded || r.Status == scheduler.StatusFailed {
				run = r
				return true
			}
		}
		return false
	})
	if run.Status != scheduler.StatusSucceeded {
		t.Fatalf("run %s: %s\n%s", run.Status, run.Error, run.Output)
	}
	if strings.Contains(run.Output, f.Name()) {
		t.Fatalf("the job inherited the daemon's %s:\n%s", f.Name(), run.Output)
	}
}
