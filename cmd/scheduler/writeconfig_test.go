package main

import (
	"os"
	"path/filepath"
	"testing"
)

// writeConfig writes a config file into a temp dir and returns its path.
func writeConfig(tb testing.TB, body string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

const minimalJob = `
jobs:
  - name: beat
    schedule: "@every 10s"
    type: exec
    command: [/bin/true]
`
