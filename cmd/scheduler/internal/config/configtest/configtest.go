// Package configtest writes configuration files for the tests of the configuration load and
// of the binary, so that both write them the same way.
package configtest

import (
	"os"
	"path/filepath"
	"testing"
)

// MinimalJob is the smallest job table that loads: one exec job on a ten-second schedule. Its
// job comes last, so a test may append keys to it.
const MinimalJob = `
jobs:
  - name: beat
    schedule: "@every 10s"
    type: exec
    command: [/bin/true]
`

// Write writes body as scheduler.yaml into a fresh temp dir and returns its path.
func Write(tb testing.TB, body string) string {
	tb.Helper()
	return WriteFile(tb, "scheduler.yaml", body)
}

// WriteFile writes content, readable by its owner alone, as name into a fresh temp dir and
// returns its path.
func WriteFile(tb testing.TB, name, content string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
