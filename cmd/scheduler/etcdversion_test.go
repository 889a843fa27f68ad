package main

import (
	"strings"
	"testing"

	"scheduler/internal/testenv"
)

// TestDaemon_ChecksEtcdVersion: the daemon asks etcd for its version at start and logs it; the
// test server is recent, so nothing warns about it.
func TestDaemon_ChecksEtcdVersion(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	r := c.start("a")
	c.wait("the etcd version line", func() bool { return strings.Contains(r.logs.String(), `"msg":"etcd server"`) })
	if logs := r.logs.String(); strings.Contains(logs, "older than the documented minimum") {
		t.Fatalf("the embedded test server was reported as old:\n%s", logs)
	}
}
