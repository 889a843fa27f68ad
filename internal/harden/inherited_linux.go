//go:build linux

package harden

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// CloseOnExec marks every file descriptor above standard error close-on-exec. The daemon opens
// its own files that way; what it inherited open from whoever started it (a shell's redirection,
// a supervisor's log or socket, a file opened by root before it dropped privileges) would
// otherwise pass to every exec job, which could read or write it whatever its own rights, even
// under another `user`. The daemon still uses them: only their passing on exec ends.
func CloseOnExec() error {
	err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("close_range(3, ~0, CLOSE_RANGE_CLOEXEC): %w", err)
	}
	// A kernel older than close_range's flag: each descriptor by itself.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list the open files: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if errors.Is(err, unix.EBADF) {
			continue // the directory listing's own, closed by now
		}
		if err == nil {
			_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC)
		}
		if err != nil {
			return fmt.Errorf("mark file descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}
