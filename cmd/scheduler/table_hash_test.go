package main

import (
	"os"
	"path/filepath"
	"testing"

	"scheduler/cmd/scheduler/internal/config"
)

// TestTableHash_History checks that the table hash covers each job's retention, wherever it
// is set: two replicas that keep different histories prune the ledger differently, and status
// must warn that their tables differ.
func TestTableHash_History(t *testing.T) {
	const job = `
jobs:
  - name: tick
    schedule: "@every 1m"
    type: builtin
    builtin: stock
`
	base := hashOf(t, job)
	for name, yaml := range map[string]string{
		"TopLevelMaxAge":  "history: {max_age: 24h}\n" + job,
		"TopLevelMaxRuns": "history: {max_runs: 5}\n" + job,
		"DefaultsMaxAge":  "defaults: {history: {max_age: 48h}}\n" + job,
		"JobMaxRuns":      job + "    history: {max_runs: 7}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if got := hashOf(t, yaml); got == base {
				t.Fatalf("hash=%s, the same as with the default retention", got)
			}
		})
	}
	t.Run("SameRetentionSameHash", func(t *testing.T) {
		a := hashOf(t, "history: {max_runs: 5}\n"+job)
		b := hashOf(t, job+"    history: {max_runs: 5}\n")
		if a != b {
			t.Fatalf("hash=%s and %s for the same retention set at two levels", a, b)
		}
	})
}

// hashOf loads the configuration text through the daemon's load and returns its table hash.
func hashOf(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := config.LoadTable(path, nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return l.Hash
}
