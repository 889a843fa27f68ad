package status

import (
	"context"
	"errors"
	"strings"
	"testing"

	"scheduler"
)

// TestExplain_Places checks that a source whose leader and control state live outside etcd is
// named for what it is in the document's warnings and in the readiness failure.
func TestExplain_Places(t *testing.T) {
	down := errors.New("down")
	src := &fakeSource{
		election: func([]scheduler.Replica) (Election, error) { return Election{}, down },
		replicas: func() ([]scheduler.Replica, error) { return nil, down },
		paused:   func() (map[string]bool, error) { return nil, down },
		last:     func() (map[string]scheduler.Run, error) { return nil, nil },
	}
	ex := testExplain
	ex.Election, ex.Control = "zookeeper", "the store"

	doc := Collect(context.Background(), src, ex, []Entry{{Name: "alpha", Enabled: true}}, testNow)
	for _, w := range []string{"read the replicas from the store: down", "read the leader from zookeeper: down", "read paused jobs from the store: down"} {
		if !hasWarning(doc, w) {
			t.Errorf("no warning %q in %q", w, doc.Warnings)
		}
	}
	for _, w := range doc.Warnings {
		if strings.Contains(w, "etcd") {
			t.Errorf("warning %q names etcd, which this source does not read", w)
		}
	}

	err := Ready(context.Background(), src, fakeDaemon{}, ex)
	for _, want := range []string{"the store: read the replicas: down", "zookeeper: down"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Ready=%v, want %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "etcd") {
		t.Errorf("Ready=%v names etcd, which this source does not read", err)
	}
}
