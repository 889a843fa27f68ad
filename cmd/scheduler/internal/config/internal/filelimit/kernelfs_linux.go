//go:build linux

package filelimit

import (
	"os"

	"golang.org/x/sys/unix"
)

// kernelFilesystems are the filesystems whose files are the kernel's, not data on disk: stat
// calls many of them regular files of size 0, and a read may wait for the kernel's next event
// (/proc/kmsg) or take data meant for another reader, such as the system logger.
var kernelFilesystems = map[int64]string{
	unix.PROC_SUPER_MAGIC:    "procfs",
	unix.SYSFS_MAGIC:         "sysfs",
	unix.DEBUGFS_MAGIC:       "debugfs",
	unix.TRACEFS_MAGIC:       "tracefs",
	unix.SECURITYFS_MAGIC:    "securityfs",
	unix.CGROUP_SUPER_MAGIC:  "cgroupfs",
	unix.CGROUP2_SUPER_MAGIC: "cgroup2fs",
	unix.BPF_FS_MAGIC:        "bpffs",
	unix.EFIVARFS_MAGIC:      "efivarfs",
	unix.PSTOREFS_MAGIC:      "pstore",
}

// kernelFS returns the name of the kernel filesystem f is on, or "" for any other (or when the
// filesystem cannot be told: the read deadline still bounds a read that waits).
func kernelFS(f *os.File) string {
	// Through SyscallConn, not Fd, which would put the file in blocking mode and end its deadlines.
	rc, err := f.SyscallConn()
	if err != nil {
		return ""
	}
	var (
		st      unix.Statfs_t
		statErr error
	)
	if err := rc.Control(func(fd uintptr) { statErr = unix.Fstatfs(int(fd), &st) }); err != nil || statErr != nil {
		return ""
	}
	return kernelFilesystems[int64(st.Type)]
}
