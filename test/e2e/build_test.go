package e2e

import (
	"testing"

	"scheduler/internal/testenv"
)

// binaries are the programs the suite runs: the scheduler as users get it, and the etcd member
// helper.
type binaries struct {
	scheduler  string
	etcdMember string
}

// buildBinaries builds the programs, without the race detector (it instruments the test process
// only). The etcd member helper is built only when the suite starts etcd itself.
func buildBinaries(t *testing.T, withEtcd bool) binaries {
	t.Helper()
	b := binaries{scheduler: testenv.MustBuild(t, "scheduler/cmd/scheduler")}
	if withEtcd {
		b.etcdMember = testenv.MustBuild(t, "scheduler/test/e2e/etcdmember")
	}
	return b
}
