package main

import (
	"os"
	"strings"
	"testing"

	"scheduler/internal/testenv"
)

// TestDaemon_WarnsOfAReadableSecret: a configuration file that every local user may read, with
// the store's password written in it, is readable by every exec job too, whatever its user: the
// daemon says so at start, naming the file and its mode, and not once the file is private.
func TestDaemon_WarnsOfAReadableSecret(t *testing.T) {
	const secret = "pg-Pa55-in-the-file"
	c := newCluster(t, testenv.MustPasswordRole(t, testenv.MustDatabase(t), "exposed", secret), "")
	const warning = "the configuration file holds a secret and every local user"
	for _, tc := range []struct {
		name string
		mode os.FileMode
		warn bool
	}{{"ReadableByOthers", 0o644, true}, {"Private", 0o640, false}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.Chmod(c.path, tc.mode); err != nil {
				t.Fatal(err)
			}
			r := c.start(tc.name)
			c.wait("a leader", func() bool { return c.status().Leader != nil })
			if err := r.stop(t); err != nil {
				t.Fatalf("stop: %v", err)
			}
			logs := r.logs.String()
			if got := strings.Contains(logs, warning); got != tc.warn {
				t.Fatalf("mode %04o: warned=%t, want %t; logs:\n%s", tc.mode, got, tc.warn, logs)
			}
			if tc.warn && (!strings.Contains(logs, `"mode":"0644"`) || !strings.Contains(logs, c.path)) {
				t.Fatalf("the warning does not name the file and its mode:\n%s", logs)
			}
			if strings.Contains(logs, secret) {
				t.Fatal("the log shows the secret")
			}
		})
	}
}
