//go:build linux

package kinds

import (
	"os"

	"golang.org/x/sys/unix"
)

// CurrentUserSwitch reads this process's uid and capabilities.
func CurrentUserSwitch() UserSwitch {
	s := UserSwitch{EUID: os.Geteuid()}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return s // unknown: only root may switch
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	s.Setuid, s.Setgid, s.Kill = has(unix.CAP_SETUID), has(unix.CAP_SETGID), has(unix.CAP_KILL)
	for _, c := range []uintptr{unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_KILL} {
		if set, err := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, c, 0, 0); err == nil && set == 1 {
			s.Ambient = true
		}
	}
	return s
}
