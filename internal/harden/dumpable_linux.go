//go:build linux

package harden

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// NonDumpable marks the process non-dumpable. The kernel then gives /proc/PID/environ, mem,
// maps and fd to root alone and refuses ptrace from the daemon's own uid, so an exec job, which
// runs as the daemon's user unless it sets `user`, cannot read the secrets in the daemon's
// environment or memory. A job gets its own dumpable flag back when it execs its program.
func NonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}
