package datadir

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// FileName is the file in the data directory that the daemon holds an exclusive lock on while
// it runs.
const FileName = "scheduler.lock"

// Lock is the daemon's hold on its data directory.
type Lock struct{ f *os.File }

// Acquire takes an exclusive, non-blocking lock on dir/scheduler.lock and records this
// process's pid and node in it. A second daemon on the same directory would otherwise wait
// without end in the embedded etcd's file lock; with this one it fails at once and names the
// holder. The kernel releases the lock when the process dies, so a file left by a crash never
// blocks a restart. CLI commands do not take it: they only read what the daemon writes.
func Acquire(dir, node string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data_dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the lock file of data dir %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is in use by %s (lock file %s); stop that process or give this one another data_dir",
				dir, holder(f), path)
		}
		return nil, fmt.Errorf("lock data dir %s (%s): %w", dir, path, err)
	}
	rec := fmt.Sprintf("pid %d\nnode %s\n", os.Getpid(), node)
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(rec), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("write the lock file %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// holder describes the process that holds the lock, from what it wrote into the file.
func holder(f *os.File) string {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 4096))
	if err != nil {
		return "another process"
	}
	var pid int
	var node string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "pid":
			pid, _ = strconv.Atoi(v)
		case "node":
			node = v
		}
	}
	switch {
	case pid <= 0:
		return "another process"
	case node == "":
		return fmt.Sprintf("pid %d", pid)
	default:
		return fmt.Sprintf("pid %d (node %s)", pid, node)
	}
}

// Release empties the record and drops the lock. The file stays: removing it would let a
// process that opened it before the removal lock a file that no longer has a name, while a
// third process locks a new one.
func (l *Lock) Release() {
	_ = l.f.Truncate(0)
	_ = l.f.Close()
}
