//go:build linux

package harden

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCloseOnExec(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "inherited"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	// As a shell's redirection leaves it: open across exec.
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	if err := CloseOnExec(); err != nil {
		t.Fatalf("CloseOnExec: %v", err)
	}
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("fd %d flags=%#x, want FD_CLOEXEC", f.Fd(), flags)
	}
	out, err := exec.Command("ls", "-l", "/proc/self/fd").CombinedOutput()
	if err != nil {
		t.Fatalf("ls: %v\n%s", err, out)
	}
	if strings.Contains(string(out), f.Name()) {
		t.Fatalf("a child still inherits %s:\n%s", f.Name(), out)
	}
}
