package datadir

import (
	"errors"
	"os"
)

// CreatePrivate creates path empty with mode 0600 unless it exists. SQLite would create the
// database with 0666 less the umask, readable by every local user (and by exec jobs running as
// another user) when data_dir itself is not private, and it gives the -wal and -shm files the
// mode of the database file.
func CreatePrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}
