package control

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
	"scheduler/internal/testenv"
)

// TestRegistration_Run keeps a replica registered on a real etcd: the entry appears, follows a
// republish, comes back after it is deleted, written over or its lease is revoked from outside,
// and is gone once Run returns. Before, a put over the entry was never corrected.
func TestRegistration_Run(t *testing.T) {
	ctx, cli, s, hash := registrationFixture(t)
	reg, err := s.NewRegistration(2*time.Second, hashedReplica(hash), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	assertPublished(t, reg.Published(), false)
	stop := startRun(ctx, t, reg.Run)
	entry := func() (scheduler.Replica, bool) {
		rs, err := s.Replicas(ctx)
		if err != nil || len(rs) != 1 {
			return scheduler.Replica{}, false
		}
		return rs[0], true
	}
	shows := func(want string) func() bool {
		return func() bool { r, ok := entry(); return ok && r.TableHash == want }
	}
	testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, "entry a with hash h1", shows("h1"))
	select {
	case <-reg.Published():
	case <-time.After(10 * time.Second):
		t.Fatal("not published after the entry appeared")
	}

	hash.Store("h2")
	reg.Republish()
	testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, "entry republished with hash h2", shows("h2"))

	// Deleted by hand (`etcdctl del`), on a lease still kept alive: published again, at once
	// rather than at the lease's end, several times over.
	for i := range 3 {
		if _, err := cli.Delete(ctx, s.k.replica("a")); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 5*time.Second, 20*time.Millisecond, fmt.Sprintf("entry published again after deletion %d", i+1), shows("h2"))
	}

	// Written over by hand (`etcdctl put` without the lease: an entry that would never expire,
	// and that the registry takes for a stray), with the same value or another: published again
	// on the replica's lease.
	for i, value := range []string{"", `{"node":"a","table_hash":"forged"}`, "not json"} {
		resp, err := cli.Get(ctx, s.k.replica("a"))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get the entry: %v", err)
		}
		if value == "" {
			value = string(resp.Kvs[0].Value)
		}
		if _, err := cli.Put(ctx, s.k.replica("a"), value); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 5*time.Second, 20*time.Millisecond, fmt.Sprintf("entry published again after overwrite %d", i+1), func() bool {
			r, err := cli.Get(ctx, s.k.replica("a"))
			return err == nil && len(r.Kvs) == 1 && r.Kvs[0].Lease == resp.Kvs[0].Lease && shows("h2")()
		})
	}

	resp, err := cli.Get(ctx, s.k.replica("a"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get the entry: %v", err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, "entry registered again on a new lease", func() bool {
		r, err := cli.Get(ctx, s.k.replica("a"))
		return err == nil && len(r.Kvs) == 1 && r.Kvs[0].Lease != resp.Kvs[0].Lease
	})

	stop()
	if _, ok := entry(); ok {
		t.Fatal("entry still registered after Run returned")
	}
}

func TestStore_NewRegistrationRefuses(t *testing.T) {
	s := mustStore(t, testenv.MustEtcd(t).Client(t), "/reg/election")
	replica := func() scheduler.Replica { return scheduler.Replica{Node: "a"} }
	if _, err := s.NewRegistration(500*time.Millisecond, replica, testLogger(t)); err == nil {
		t.Error("NewRegistration with a TTL under a second: no error")
	}
	if _, err := s.NewRegistration(time.Second, nil, testLogger(t)); err == nil {
		t.Error("NewRegistration without a replica: no error")
	}
}

// TestRegistration_SameNodeTwice: two replicas registering under one node name (two on one
// host, containers with one hostname) do not write over each other's entry without end, as
// each would if it took the other's put for one from outside: one error line each names the
// problem, and the key is put a few times, not thousands.
func TestRegistration_SameNodeTwice(t *testing.T) {
	ctx, cli, s, hash := registrationFixture(t)
	core, logs := observer.New(zap.InfoLevel)
	start, err := cli.Get(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		reg, err := s.NewRegistration(2*time.Second, hashedReplica(hash), zap.New(core))
		if err != nil {
			t.Fatal(err)
		}
		defer startRun(ctx, t, reg.Run)()
		<-reg.Published()
	}
	time.Sleep(2 * time.Second)
	end, err := cli.Get(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	if n := end.Header.Revision - start.Header.Revision; n > 10 {
		t.Fatalf("%d etcd revisions in 2 s, want a few: the two registrations write over each other", n)
	}
	if n := logs.FilterMessageSnippet("another replica publishes under this node name").Len(); n < 1 || n > 2 {
		t.Fatalf("%d lines naming the other replica, want one or two (one per registration that saw the other)", n)
	}
}

// registrationFixture returns a store on a fresh etcd, its client, and a table hash "h1" for
// hashedReplica.
func registrationFixture(t *testing.T) (context.Context, *clientv3.Client, *Store, *atomic.Value) {
	t.Helper()
	cli := testenv.MustEtcd(t).Client(t)
	var hash atomic.Value
	hash.Store("h1")
	return testCtx(t), cli, mustStore(t, cli, "/reg/election"), &hash
}
