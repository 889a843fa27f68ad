package testenv

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestEtcd_SingleMember(t *testing.T) {
	t.Parallel()
	e := MustEtcd(t)
	cli := e.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if _, err := cli.Put(ctx, "k", "v1"); err != nil {
		t.Fatalf("put: %v", err)
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v1" {
		t.Fatalf("get k = %v, want v1", resp.Kvs)
	}
	if got := e.LeaderIndex(t); got != 0 {
		t.Fatalf("leader index = %d, want 0", got)
	}

	t.Run("RestartKeepsData", func(t *testing.T) {
		e.Stop(t, 0)
		if e.Member(0) != nil {
			t.Fatalf("member 0 not nil while stopped")
		}
		e.Restart(t, 0)
		resp, err := e.ClientFor(t, 0).Get(ctx, "k")
		if err != nil {
			t.Fatalf("get after restart: %v", err)
		}
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v1" {
			t.Fatalf("get k after restart = %v, want v1", resp.Kvs)
		}
	})
}

func TestEtcd_Cluster(t *testing.T) {
	t.Parallel()
	e := MustEtcdCluster(t, 3)
	if n := len(e.Endpoints()); n != 3 {
		t.Fatalf("endpoints = %d, want 3", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := e.Client(t)
	if _, err := cli.Put(ctx, "k", "before"); err != nil {
		t.Fatalf("put: %v", err)
	}

	old := e.LeaderIndex(t)
	e.Stop(t, old)
	if e.Member(old) != nil {
		t.Fatalf("member %d not nil while stopped", old)
	}
	leader := e.LeaderIndex(t)
	if leader == old {
		t.Fatalf("leader = %d after stopping it", leader)
	}
	// The survivors hold a quorum and accept writes.
	if _, err := e.ClientFor(t, leader).Put(ctx, "k", "during"); err != nil {
		t.Fatalf("put with member %d stopped: %v", old, err)
	}

	e.Restart(t, old)
	// The restarted member catches up: a linearizable read served through it
	// sees the write made while it was down.
	resp, err := e.ClientFor(t, old).Get(ctx, "k")
	if err != nil {
		t.Fatalf("get from restarted member %d: %v", old, err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "during" {
		t.Fatalf("get k from restarted member = %v, want during", resp.Kvs)
	}
	e.LeaderIndex(t)
}

func TestEtcd_StopWithOpenStream(t *testing.T) {
	t.Parallel()
	e := MustEtcdCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	old := e.LeaderIndex(t)
	// A watch stream keeps a graceful close waiting for seconds; Stop must
	// not: the member is gone when it returns.
	e.ClientFor(t, old).Watch(ctx, "k")
	e.Stop(t, old)
	if e.Member(old) != nil {
		t.Fatalf("member %d not nil after Stop", old)
	}
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	if _, err := e.ClientFor(t, old).Get(short, "k"); err == nil {
		t.Fatalf("get from stopped member %d succeeded", old)
	}
	leader := e.LeaderIndex(t)
	if leader == old {
		t.Fatalf("leader = %d, the stopped member", leader)
	}
	e.Restart(t, old)
	if e.Member(old) == nil {
		t.Fatalf("member %d nil after Restart", old)
	}
}

func TestEtcd_ThroughProxy(t *testing.T) {
	t.Parallel()
	e := MustEtcd(t)
	p := MustProxy(t, e.Endpoint(0))
	cli := newClient(t, p.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "1"); err != nil {
		t.Fatalf("put through proxy: %v", err)
	}

	p.Pause()
	// The held put may still be applied after Resume, concurrently with
	// the next one; a key of its own keeps it from racing the put of "3".
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := cli.Put(short, "paused", "2")
	cancelShort()
	if err == nil {
		t.Fatalf("put through paused proxy succeeded")
	}
	p.Resume()
	// The stream survived the pause: the same client goes on.
	if _, err := cli.Put(ctx, "k", "3"); err != nil {
		t.Fatalf("put after resume: %v", err)
	}

	p.Cut()
	short, cancelShort = context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = cli.Get(short, "k")
	cancelShort()
	if err == nil {
		t.Fatalf("get through cut proxy succeeded")
	}
	p.Resume()
	resp, err := cli.Get(ctx, "k")
	if err != nil {
		t.Fatalf("get after cut healed: %v", err)
	}
	if got := string(resp.Kvs[0].Value); got != "3" {
		t.Fatalf("k = %q, want 3", got)
	}
}

func TestStartMembers_PortTaken(t *testing.T) {
	t.Parallel()
	members, err := newClusterMembers(t.TempDir(), 3)
	if err != nil {
		t.Fatalf("new members: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	members[1].client.Host = ln.Addr().String()

	err = startMembers(members)
	if !isAddrInUse(err) {
		t.Fatalf("start with a taken port: %v, want address in use", err)
	}
	for _, m := range members {
		if m.server != nil {
			t.Fatalf("member %s still running after failed start", m.name)
		}
	}
}
