package control

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"scheduler"
)

func TestStore_Register(t *testing.T) {
	t.Parallel()
	ctx, s := etcdStore(t, "/replica/election")
	cli := s.cli
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	sess1, err := concurrency.NewSession(cli, concurrency.WithTTL(60))
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	defer func() { _ = sess1.Close() }()
	sess2, err := concurrency.NewSession(cli, concurrency.WithTTL(60))
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	defer func() { _ = sess2.Close() }()

	r1 := scheduler.Replica{Node: "n1", Version: "v1.2.3", TableHash: TableHash("a"), HTTPAddr: "127.0.0.1:8080", StartedAt: started}
	r2 := scheduler.Replica{Node: "n2", Version: "v1.2.3", TableHash: TableHash("b"), StartedAt: started}
	if err := s.Register(ctx, sess2.Lease(), r2); err != nil {
		t.Fatalf("register n2: %v", err)
	}
	if err := s.Register(ctx, sess1.Lease(), r1); err != nil {
		t.Fatalf("register n1: %v", err)
	}
	rs, err := s.Replicas(ctx)
	if err != nil {
		t.Fatalf("replicas: %v", err)
	}
	if len(rs) != 2 || rs[0] != r1 || rs[1] != r2 {
		t.Fatalf("replicas = %+v, want %+v then %+v", rs, r1, r2)
	}
	if g := HashGroups(rs); len(g) != 2 {
		t.Fatalf("hash groups = %v, want two (the tables differ)", g)
	}

	// Re-registering replaces the entry (a reloaded table).
	r1.TableHash = r2.TableHash
	if err := s.Register(ctx, sess1.Lease(), r1); err != nil {
		t.Fatalf("register n1 again: %v", err)
	}
	rs, err = s.Replicas(ctx)
	if err != nil {
		t.Fatalf("replicas: %v", err)
	}
	if g := HashGroups(rs); len(g) != 1 || len(rs) != 2 {
		t.Fatalf("replicas %+v in hash groups %v, want two in one group", rs, g)
	}

	t.Run("VanishesWithItsLease", func(t *testing.T) {
		if _, err := cli.Revoke(ctx, sess1.Lease()); err != nil {
			t.Fatalf("revoke: %v", err)
		}
		rs, err := s.Replicas(ctx)
		if err != nil {
			t.Fatalf("replicas: %v", err)
		}
		if len(rs) != 1 || rs[0].Node != "n2" {
			t.Fatalf("replicas after revoking n1's lease = %+v, want only n2", rs)
		}
		// Registering on a lease that is gone fails instead of writing an
		// entry that would never vanish.
		if err := s.Register(ctx, sess1.Lease(), r1); err == nil {
			t.Fatalf("register on a revoked lease succeeded")
		}
	})

	t.Run("RejectsBadInput", func(t *testing.T) {
		if err := s.Register(ctx, clientv3.NoLease, r2); err == nil {
			t.Errorf("register without a lease succeeded")
		}
		for _, node := range []string{"", "a/b", "a b"} {
			if err := s.Register(ctx, sess2.Lease(), scheduler.Replica{Node: node}); !errors.Is(err, ErrInvalidNode) {
				t.Errorf("register node %q = %v, want ErrInvalidNode", node, err)
			}
		}
	})
}

func TestTableHash(t *testing.T) {
	a := TableHash("invoices 0 2 * * * Europe/Berlin builtin", "stock @hourly UTC builtin")
	if len(a) != 16 {
		t.Fatalf("hash %q: %d characters, want 16", a, len(a))
	}
	// Stable across processes and builds: a fixed input has a fixed digest,
	// the first 8 bytes of SHA-256 over each sorted part preceded by its
	// length as a big-endian uint64 (computed outside Go).
	if got, want := TableHash("b", "a"), "3c9d591045bc8876"; got != want {
		t.Errorf("TableHash(a, b) = %s, want %s", got, want)
	}
	for _, tc := range []struct {
		name string
		x, y []string
		same bool
	}{
		{"OrderDoesNotMatter", []string{"a", "b"}, []string{"b", "a"}, true},
		{"BoundariesMatter", []string{"ab", "c"}, []string{"a", "bc"}, false},
		{"DuplicatesCount", []string{"a"}, []string{"a", "a"}, false},
		{"EmptyPartCounts", []string{"a"}, []string{"a", ""}, false},
		{"ContentMatters", []string{"a 1"}, []string{"a 2"}, false},
		{"EmptyTables", nil, []string{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hx, hy := TableHash(tc.x...), TableHash(tc.y...)
			if (hx == hy) != tc.same {
				t.Errorf("TableHash(%q) = %s, TableHash(%q) = %s, want same=%v", tc.x, hx, tc.y, hy, tc.same)
			}
		})
	}
	parts := []string{"b", "a"}
	TableHash(parts...)
	if parts[0] != "b" {
		t.Errorf("TableHash reordered its argument: %q", parts)
	}
}

func TestHashGroups(t *testing.T) {
	g := HashGroups([]scheduler.Replica{
		{Node: "n3", TableHash: "x"},
		{Node: "n1", TableHash: "x"},
		{Node: "n2", TableHash: "y"},
	})
	if keys := slices.Sorted(maps.Keys(g)); !slices.Equal(keys, []string{"x", "y"}) {
		t.Fatalf("groups %v, want x and y", g)
	}
	if !slices.Equal(g["x"], []string{"n1", "n3"}) || !slices.Equal(g["y"], []string{"n2"}) {
		t.Fatalf("groups %v, want x:[n1 n3] y:[n2]", g)
	}
	if len(HashGroups(nil)) != 0 {
		t.Fatalf("groups of no replicas not empty")
	}
}
