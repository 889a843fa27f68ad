// Package filelimit reads the files the configuration names (the configuration itself, a
// secret) the one safe way: a regular file only, within a size bound, never waiting on a pipe
// or a device, with errors that name the path and never quote the content.
package filelimit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// Limit is the largest file of one kind that is read, and the kind, for the refusal.
type Limit struct {
	Bytes int64
	Kind  string
}

// Read reads a regular file of at most l.Bytes, reading no more than one byte past
// the limit and waiting no longer than fileStall for data. Its errors name the path and never
// quote the content, which may be a secret.
func Read(path string, l Limit) ([]byte, error) {
	f, err := openRegularFile(path, fileStall)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := ReadLimited(f, path, l)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, stalledError(path, fileStall)
	}
	return data, err
}

// Open opens path for reading as Read does, without reading it: a regular file only, never
// waiting on a pipe, and with a read deadline on a file whose reads can wait (see
// openRegularFile). A read past the deadline fails with os.ErrDeadlineExceeded.
func Open(path string) (*os.File, error) { return openRegularFile(path, fileStall) }

// fileStall is how long a read of the configuration or a secret file may wait for data. A file
// on disk never makes a read wait; a kernel stream that stat calls a regular file (/proc/kmsg)
// would block `validate`, a reload, and with it the daemon's shutdown, forever.
const fileStall = 5 * time.Second

// openRegularFile opens path for reading if it is a regular file, and refuses anything else
// without blocking: the open is non-blocking, so a named pipe put in place of the file after
// the first check does not wait for a writer, and a file whose reads can wait (one the poller
// accepts, which a file on disk never is) gets a read deadline stall from now.
func openRegularFile(path string, stall time.Duration) (*os.File, error) {
	// Stat before open, so that a device is refused without being opened at all.
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fileKind(st.Mode()))
	}
	return OpenChecked(path, stall)
}

// OpenChecked is the open of a path seen to be a regular file: what it opens may have been
// replaced since, and is refused unless it is a regular file still, and not the kernel's (a file
// of /proc or /sys, which stat calls regular); a file whose reads can wait gets a read deadline
// stall from now.
func OpenChecked(path string, stall time.Duration) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fileKind(st.Mode()))
	}
	if fs := kernelFS(f); fs != "" {
		_ = f.Close()
		return nil, fmt.Errorf("%s is a kernel file on %s, not a file on disk: its reads may wait for the kernel or take what another reader is owed", path, fs)
	}
	_ = f.SetReadDeadline(time.Now().Add(stall)) // os.ErrNoDeadline for a file on disk
	return f, nil
}

// stalledError says that reading path waited past stall.
func stalledError(path string, stall time.Duration) error {
	return fmt.Errorf("%s gave no data for %s: it is not a file on disk", path, stall)
}

// ReadLimited reads r to its end, at most l.Bytes+1 bytes of it, and refuses more than l.Bytes.
func ReadLimited(r io.Reader, name string, l Limit) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, l.Bytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > l.Bytes {
		unit := ""
		switch {
		case l.Bytes%(1<<20) == 0:
			unit = fmt.Sprintf(" (%d MiB)", l.Bytes>>20)
		case l.Bytes%(1<<10) == 0:
			unit = fmt.Sprintf(" (%d KiB)", l.Bytes>>10)
		}
		return nil, fmt.Errorf("%s is larger than the limit of %d bytes%s for a %s file", name, l.Bytes, unit, l.Kind)
	}
	return data, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeCharDevice != 0, m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "not a plain file"
}
