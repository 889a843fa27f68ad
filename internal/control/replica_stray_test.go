package control

import (
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"scheduler"
)

// TestStore_Registry: registry entries written by hand (without a lease, or not a replica's
// entry for their key, or with texts no replica publishes) are no replicas: each is reported, bounded, with the command that
// removes it, and the real replicas are listed alone.
func TestStore_Registry(t *testing.T) {
	t.Parallel()
	ctx, s := etcdStore(t, "/registry/election")
	sess, err := concurrency.NewSession(s.cli, concurrency.WithTTL(60))
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	defer func() { _ = sess.Close() }()
	r1 := scheduler.Replica{Node: "n1", Version: "v1", TableHash: TableHash("a"), StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err := s.Register(ctx, sess.Lease(), r1); err != nil {
		t.Fatalf("register: %v", err)
	}
	long := strings.Repeat("x", 100_000)
	p := "/registry/election:replica/"
	stray := map[string]clientv3.LeaseID{
		p + "evil":   clientv3.NoLease,
		p:            clientv3.NoLease,
		p + "typed":  clientv3.NoLease,
		p + long:     clientv3.NoLease,
		p + "ghost":  clientv3.NoLease,
		p + "leased": sess.Lease(),
		// Leased, and a replica's entry for its key, but with texts that `status` would print
		// to a terminal as they are.
		p + "escape":  sess.Lease(),
		p + "c1":      sess.Lease(),
		p + "longver": sess.Lease(),
	}
	values := map[string]string{
		p + "evil":    "not json",
		p:             `{"node":"zz"}`,
		p + "typed":   `{"node":5,"version":[1],"table_hash":{},"http_addr":true,"started_at":"x"}`,
		p + long:      `{"http_addr":"127.0.0.1:1"}`,
		p + "ghost":   `{"node":"ghost","version":"v1","table_hash":"x"}`,
		p + "leased":  `{"node":"other"}`,
		p + "escape":  `{"node":"escape","version":"\u001b]0;owned\u0007","table_hash":"\u001b[2J","http_addr":"127.0.0.1:1"}`,
		p + "c1":      `{"node":"c1","version":"v1","http_addr":"\u009b2J"}`,
		p + "longver": `{"node":"longver","version":"` + strings.Repeat("v", 257) + `"}`,
	}
	for k, lease := range stray {
		if _, err := s.cli.Put(ctx, k, values[k], clientv3.WithLease(lease)); err != nil {
			t.Fatalf("put %.40s: %v", k, err)
		}
	}
	rs, problems, err := s.Registry(ctx)
	if err != nil {
		t.Fatalf("registry: %v", err)
	}
	if len(rs) != 1 || rs[0] != r1 {
		t.Errorf("replicas = %.300v, want %+v alone", rs, r1)
	}
	if got, err := s.Replicas(ctx); err != nil || len(got) != 1 || got[0] != r1 {
		t.Errorf("Replicas = %.300v (err %v), want %+v alone", got, err, r1)
	}
	if len(problems) != len(stray) {
		t.Errorf("%d problems, want %d: %.2000q", len(problems), len(stray), problems)
	}
	for _, pr := range problems {
		if len(pr) > 4*maxShownKey+200 || !strings.Contains(pr, "remove it with: etcdctl del ") && !strings.Contains(pr, longKeyThen) {
			t.Errorf("problem of %d bytes %.300q: want it bounded, with the etcdctl del", len(pr), pr)
		}
	}
}
