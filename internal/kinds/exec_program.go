package kinds

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// lookPath finds the program in the job's PATH rather than the daemon's, as a shell started with
// the job's environment would.
func (j *ExecJob) lookPath() (string, error) {
	name := j.argv[0]
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && j.dir != "" {
			p = filepath.Join(j.dir, p)
		}
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("program %s: %w", name, err)
		}
		return name, nil // relative to Dir: the child resolves it after its chdir
	}
	for _, d := range filepath.SplitList(j.path) {
		if !filepath.IsAbs(d) {
			continue // never run something from wherever the daemon happens to be
		}
		p := filepath.Join(d, name)
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("program %s: not found in PATH %s", name, j.path)
}

// checkExecutable reports why p cannot be run, or nil.
func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return errors.New("is a directory")
	case fi.Mode()&0o111 == 0:
		return errors.New("not executable")
	}
	return nil
}

// permanentStartError reports whether starting failed for a reason a retry will meet again: a
// missing or unexecutable program, interpreter or working directory. Other failures (out of
// processes or memory) may pass.
func permanentStartError(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, syscall.ENOEXEC) || errors.Is(err, syscall.ENOTDIR)
}
