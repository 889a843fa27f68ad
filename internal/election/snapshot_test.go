package election

import (
	"context"
	"fmt"
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
	// A term record vouches for the leader key only when the leader could have written it: on
	// the key's lease, naming the key's value and token. A record forged beside a foreign key
	// would otherwise pass that key off as a replica whose registration lapsed.
	t.Run("TermRecordOfTheKeysLeaseOnly", func(t *testing.T) {
		lease, err := cli.Grant(ctx, 30)
		if err != nil {
			t.Fatal(err)
		}
		other, err := cli.Grant(ctx, 30)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = cli.Revoke(ctx, lease.ID); _, _ = cli.Revoke(ctx, other.ID) })
		held, err := cli.Put(ctx, prefix+"/foreign", "evil", clientv3.WithLease(lease.ID))
		if err != nil {
			t.Fatal(err)
		}
		since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		record := func(node string, token int64) string {
			return fmt.Sprintf(`{"node":%q,"token":%d,"since":%q}`, node, token, since.Format(time.RFC3339))
		}
		for _, tc := range []struct {
			name   string
			value  string
			opts   []clientv3.OpOption
			vouchs bool
		}{
			{"NoLease", record("evil", held.Header.Revision), nil, false},
			{"OtherLease", record("evil", held.Header.Revision), []clientv3.OpOption{clientv3.WithLease(other.ID)}, false},
			{"OtherNode", record("a", held.Header.Revision), []clientv3.OpOption{clientv3.WithLease(lease.ID)}, false},
			{"OtherToken", record("evil", held.Header.Revision-1), []clientv3.OpOption{clientv3.WithLease(lease.ID)}, false},
			{"AsTheLeaderWritesIt", record("evil", held.Header.Revision), []clientv3.OpOption{clientv3.WithLease(lease.ID)}, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := cli.Put(ctx, termKey(prefix), tc.value, tc.opts...); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _, _ = cli.Delete(ctx, termKey(prefix)) })
				s, err := ReadSnapshot(ctx, cli, prefix)
				if err != nil || !s.Leads {
					t.Fatalf("snapshot=%+v, %v; want the foreign key leading", s, err)
				}
				if got := !s.Leader.Since.IsZero(); got != tc.vouchs {
					t.Fatalf("since=%v from record %s, want it taken: %t", s.Leader.Since, tc.value, tc.vouchs)
				}
				if ps := s.Problems([]string{"a"}); (len(ps) == 0) != tc.vouchs {
					t.Fatalf("problems=%q", ps)
				}
			})
		}
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
