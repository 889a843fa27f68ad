//go:build linux

package harden

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestMakeNonDumpable(t *testing.T) {
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) })
	if err := NonDumpable(); err != nil {
		t.Fatalf("NonDumpable: %v", err)
	}
	got, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		t.Fatalf("PR_GET_DUMPABLE: %v", err)
	}
	if got != 0 {
		t.Fatalf("dumpable=%d, want 0", got)
	}
}
