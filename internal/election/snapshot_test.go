package election

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler/internal/testenv"
)

func TestForeignLeader(t *testing.T) {
	nodes := []string{"a", "b"}
	key := Leader{Node: "x", Token: 7, Key: "/p/election/x", Lease: 0x2a}
	for _, tc := range []struct {
		name   string
		leader Leader
		want   string // a part of the problem, "" for none
	}{
		{"RegisteredReplica", Leader{Node: "a", Token: 7, Key: "/p/election/2a", Lease: 0x2a}, ""},
		{"ReplicaNotRegisteredYetPublishedItsTerm", Leader{Node: "c", Token: 7, Key: "/p/election/2a", Lease: 0x2a, Since: time.Unix(1, 0)}, ""},
		{"NoReplicaNoTerm", key, "etcdctl lease revoke 2a"},
		{"LongValueCut", Leader{Node: strings.Repeat("v", 1000), Token: 7, Key: "/p/election/x", Lease: 1}, strings.Repeat("v", maxLoggedValue) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ForeignLeader(tc.leader, nodes)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("ForeignLeader = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReadSnapshot reads a real election prefix: empty, held by a leased key with a lease-less
// key behind it, and held by nobody while a lease-less key comes first.
func TestReadSnapshot(t *testing.T) {
	ctx := testContext(t)
	cli := testenv.MustEtcd(t).Client(t)
	const prefix = "/snap/election"

	t.Run("Empty", func(t *testing.T) {
		s, err := ReadSnapshot(ctx, cli, prefix)
		if err != nil || s.Leads || len(s.Leaseless) != 0 {
			t.Fatalf("snapshot=%+v, %v; want no leader, no keys", s, err)
		}
		if p := s.Problems([]string{}); len(p) != 0 {
			t.Fatalf("problems=%q, want none", p)
		}
	})
	t.Run("LeaderAndLeaselessKeyBehind", func(t *testing.T) {
		lease, err := cli.Grant(ctx, 30)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = cli.Revoke(ctx, lease.ID) })
		held, err := cli.Put(ctx, prefix+"/held", "outsider", clientv3.WithLease(lease.ID))
		if err != nil {
			t.Fatal(err)
		}
		putLeaseless(ctx, t, cli, prefix+"/stray", "by hand")
		t.Cleanup(func() { _, _ = cli.Delete(ctx, prefix+"/stray") })
		s, err := ReadSnapshot(ctx, cli, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Leads || s.Leader.Node != "outsider" || s.Leader.Token != held.Header.Revision {
			t.Fatalf("leader=%+v leads=%t, want outsider at token %d", s.Leader, s.Leads, held.Header.Revision)
		}
		if len(s.Leaseless) != 1 || s.Leaseless[0].Key != prefix+"/stray" {
			t.Fatalf("leaseless=%+v, want the stray key", s.Leaseless)
		}
		ps := s.Problems([]string{"a"})
		if len(ps) != 2 || !strings.Contains(ps[0], "etcdctl del "+prefix+"/stray") || !strings.Contains(ps[1], "etcdctl lease revoke") {
			t.Fatalf("problems=%q, want the stray key's removal and the outsider's lease", ps)
		}
		if ps := s.Problems(nil); len(ps) != 1 {
			t.Fatalf("problems without the replicas=%q, want the stray key's alone", ps)
		}
		if ps := s.Problems([]string{"outsider"}); len(ps) != 1 {
			t.Fatalf("problems with the holder a replica=%q, want the stray key's alone", ps)
		}
		_, _ = cli.Revoke(ctx, lease.ID)
	})
	t.Run("LeaselessKeyFirst", func(t *testing.T) {
		putLeaseless(ctx, t, cli, prefix+"/first", "by hand")
		t.Cleanup(func() { _, _ = cli.Delete(ctx, prefix+"/first") })
		s, err := ReadSnapshot(ctx, cli, prefix)
		if err != nil || s.Leads || len(s.Leaseless) != 1 {
			t.Fatalf("snapshot=%+v, %v; want no leader and the lease-less key", s, err)
		}
	})
	t.Run("EtcdDown", func(t *testing.T) {
		dead, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer dead.Close()
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := ReadSnapshot(sctx, dead, prefix); err == nil {
			t.Fatal("ReadSnapshot without etcd: no error")
		}
	})
}
