package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler/internal/status"
	"scheduler/internal/testenv"
)

// TestDaemon_LeaselessKey: a key put by hand under the election prefix is reported by status,
// /status and /readyz (503, with the command that removes it) while it exists, is never shown
// as the leader, and once it blocks the replica's next campaign the replica removes it, says so
// at error level, and leads again.
func TestDaemon_LeaselessKey(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	r := c.start("a")
	addr, first := c.leading()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := c.etcd.Client(t)
	fake := "/test/election/0fake"
	if _, err := cli.Put(ctx, fake, "x"); err != nil {
		t.Fatal(err)
	}
	remove := "etcdctl del " + fake

	c.wait("readyz to fail naming the key", func() bool {
		code, body := httpGet(t, "http://"+addr+"/readyz")
		return code == 503 && strings.Contains(body, fake) && strings.Contains(body, remove)
	})
	doc := c.status()
	if len(doc.Leaseless) != 1 || doc.Leaseless[0].Key != fake || doc.Leaseless[0].Value != "x" || doc.Leaseless[0].Remove != remove {
		t.Fatalf("status leaseless_keys = %+v, want %s with %q", doc.Leaseless, fake, remove)
	}
	if doc.Leader == nil || doc.Leader.Token != first.Token {
		t.Fatalf("status leader = %+v, want a's term %d: the key came after it", doc.Leader, first.Token)
	}
	if out := c.cli("status"); !strings.Contains(out, "warning:  lease-less key "+fake) || !strings.Contains(out, remove) {
		t.Fatalf("status does not warn about %s:\n%s", fake, out)
	}
	if _, body := httpGet(t, "http://"+addr+"/status"); !strings.Contains(body, `"leaseless_keys"`) || !strings.Contains(body, remove) {
		t.Fatalf("/status does not list %s:\n%.1000s", fake, body)
	}
	if !strings.Contains(r.logs.String(), "lease-less key under the election prefix") {
		t.Fatalf("no log line names the lease-less key:\n%s", r.logs)
	}

	// The leader key deleted: a's next key is newer than the stray one, which would block it.
	deleteLeaderKey(ctx, t, cli, "")
	c.wait("a to lead again with a new token", func() bool {
		doc := c.status()
		if doc.Leader != nil && doc.Leader.Node == "x" {
			t.Fatalf("status names the lease-less key's value as the leader: %+v", doc.Leader)
		}
		return doc.Leader != nil && doc.Leader.Token > first.Token && len(doc.Leaseless) == 0
	})
	if code, body := httpGet(t, "http://"+addr+"/readyz"); code != 200 {
		t.Fatalf("readyz = %d %s after the key was removed, want 200", code, body)
	}
	if logs := r.logs.String(); !strings.Contains(logs, "removed a lease-less key") || !strings.Contains(logs, fake) {
		t.Fatalf("no error line says the key was removed:\n%s", logs)
	}
}

// TestDaemon_ForeignLeaseKey: a key under the election prefix bound to a lease that another
// client keeps alive (`etcdctl elect PREFIX VALUE` without --listen) wins the election once it
// stands first. It cannot be told from a replica's key by its lease, so it is not removed; status,
// /status and /readyz say that the election is held by no replica and how to end it, and once its
// lease is revoked the replica leads again.
func TestDaemon_ForeignLeaseKey(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	r := c.start("a")
	addr, first := c.leading()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli := c.etcd.Client(t)
	lease := keptLease(ctx, t, cli)
	outsider := "/test/election/outsider"
	// Its value, and a registry entry on its lease, hold what a terminal acts on.
	put, err := cli.Put(ctx, outsider, "someone\x1b]0;owned\x07", clientv3.WithLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	// A term record forged for it, on no lease: a replica's record is bound to its key's lease,
	// so this one vouches for nothing.
	forged := fmt.Sprintf(`{"node":"someone\u001b]0;owned\u0007","token":%d,"since":"2026-01-01T00:00:00Z"}`, put.Header.Revision)
	if _, err := cli.Put(ctx, "/test/election.term", forged); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/test/election:replica/x", `{"node":"x","version":"\u001b[2J"}`, clientv3.WithLease(lease)); err != nil {
		t.Fatal(err)
	}
	// a's leader key deleted: a's next key is newer than the outsider's, which now holds the election.
	deleteLeaderKey(ctx, t, cli, outsider)
	revoke := fmt.Sprintf("etcdctl lease revoke %x", lease)
	c.wait("readyz to fail naming the outsider's key and lease", func() bool {
		code, body := httpGet(t, "http://"+addr+"/readyz")
		return code == 503 && strings.Contains(body, outsider) && strings.Contains(body, revoke)
	})
	if out := c.cli("status"); !strings.Contains(out, "names no running replica") || !strings.Contains(out, revoke) {
		t.Fatalf("status does not say that no replica holds the election:\n%s", out)
	} else if strings.ContainsRune(out, 0x1b) || !strings.Contains(out, `leader:   someone\x1b]0;owned\x07,`) {
		t.Fatalf("status prints the keys' control characters as they are, or not the leader escaped:\n%q", out)
	}
	if _, body := httpGet(t, "http://"+addr+"/status"); !strings.Contains(body, "names no running replica") {
		t.Fatalf("/status does not say that no replica holds the election:\n%.1000s", body)
	}
	c.waitErrorLine(r, "the outsider's hold", "election blocked", revoke)

	if _, err := cli.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	c.waitLeadsAfter("a", first.Token)
	c.wait("readyz to answer 200", func() bool {
		code, _ := httpGet(t, "http://"+addr+"/readyz")
		return code == 200
	})
	if out := c.cli("status"); strings.Contains(out, "names no running replica") {
		t.Fatalf("status still warns once a leads:\n%s", out)
	}
}

// leading waits until a replica leads and is registered, and returns the HTTP address of the
// first replica and the leader.
func (c *cluster) leading() (addr string, l *status.Leader) {
	c.t.Helper()
	c.wait("a replica to lead", func() bool {
		doc := c.status()
		if doc.Leader == nil || len(doc.Replicas) == 0 {
			return false
		}
		addr, l = doc.Replicas[0].HTTPAddr, doc.Leader
		return true
	})
	return addr, l
}

// TestDaemon_KeyInAReplicasName: a key bound to a lease another client keeps alive, whose value
// names a running replica, holds the election as TestDaemon_ForeignLeaseKey's does, but the
// registry cannot tell it from that replica. The replica it names can: its log (error) and its
// /status say that the election is held in its name by a hold not its own, and how to end it.
func TestDaemon_KeyInAReplicasName(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), "")
	r := c.start("a")
	addr, first := c.leading()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cli := c.etcd.Client(t)
	lease := keptLease(ctx, t, cli)
	if _, err := cli.Put(ctx, "/test/election/forged", "a", clientv3.WithLease(lease)); err != nil {
		t.Fatal(err)
	}
	// a's own key deleted: a campaigns again behind the forged key, which now holds the election.
	deleteLeaderKey(ctx, t, cli, "/test/election/forged")
	revoke := fmt.Sprintf("etcdctl lease revoke %x", lease)
	c.wait("/status to name the hold in a's name", func() bool {
		_, body := httpGet(t, "http://"+addr+"/status")
		return strings.Contains(body, "in this replica's name") && strings.Contains(body, revoke)
	})
	c.waitErrorLine(r, "the hold in a's name", "in this replica's name", revoke)
	if _, err := cli.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	c.waitLeadsAfter("a", first.Token)
	c.wait("a's /status to drop the warning", func() bool {
		_, body := httpGet(t, "http://"+addr+"/status")
		return !strings.Contains(body, "in this replica's name")
	})
}

// keptLease grants a lease of 5 s that cli keeps alive until the test ends, as another client
// of the cluster would.
func keptLease(ctx context.Context, t *testing.T, cli *clientv3.Client) clientv3.LeaseID {
	t.Helper()
	lease, err := cli.Grant(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	kctx, stopKeepAlive := context.WithCancel(ctx)
	t.Cleanup(stopKeepAlive)
	if _, err := cli.KeepAlive(kctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	return lease.ID
}

// deleteLeaderKey deletes the key that holds the test election, which must not be notKey (a key
// the test put itself and expects behind the leader's).
func deleteLeaderKey(ctx context.Context, t *testing.T, cli *clientv3.Client, notKey string) {
	t.Helper()
	resp, err := cli.Get(ctx, "/test/election/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 || string(resp.Kvs[0].Key) == notKey {
		t.Fatalf("read the leader key: %v", err)
	}
	if _, err := cli.Delete(ctx, string(resp.Kvs[0].Key)); err != nil {
		t.Fatal(err)
	}
}

// waitErrorLine waits until r has logged a line at error level that holds every one of parts;
// what names the line in the failure.
func (c *cluster) waitErrorLine(r *replica, what string, parts ...string) {
	c.t.Helper()
	c.wait("an error line naming "+what, func() bool {
		for _, l := range strings.Split(r.logs.String(), "\n") {
			if strings.Contains(l, `"level":"error"`) && !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(l, p) }) {
				return true
			}
		}
		return false
	})
}

// waitLeadsAfter waits until node leads with a token newer than after.
func (c *cluster) waitLeadsAfter(node string, after int64) {
	c.t.Helper()
	c.wait(node+" to lead again with a new token", func() bool {
		doc := c.status()
		return doc.Leader != nil && doc.Leader.Node == node && doc.Leader.Token > after
	})
}
