package redact

import (
	"bytes"
	"os"
)

// Exposed reports the mode of the file at path when every local user may read it and it holds
// one of secrets as written: then so may every exec job, whatever its user. 0 when it does not,
// or cannot be read.
func Exposed(path string, secrets []string) os.FileMode {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o004 == 0 {
		return 0
	}
	raw, err := os.ReadFile(path)
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
