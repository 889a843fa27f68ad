package redact

import (
	"bytes"
	"io"
	"os"
	"syscall"
)

// maxExposedBytes bounds what Exposed reads: the configuration file's own limit.
const maxExposedBytes = 16 << 20

// Exposed reports the mode of the file at path when every local user may read it and it holds
// one of secrets as written: then so may every exec job, whatever its user. 0 when it does not,
// or cannot be read. The file was read and checked by the load just before; whatever took its
// place since (a named pipe, a device, a file grown past the limit) is not waited on nor read
// whole: it is opened without blocking and only a regular file is read, up to the limit.
func Exposed(path string, secrets []string) os.FileMode {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o004 == 0 {
		return 0
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxExposedBytes))
	if err != nil {
		return 0
	}
	for _, s := range secrets {
		if s != "" && bytes.Contains(raw, []byte(s)) {
			return fi.Mode().Perm()
		}
	}
	return 0
}
