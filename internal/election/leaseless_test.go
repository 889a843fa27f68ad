package election

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"scheduler/internal/testenv"
)

// removedMsg is the error line of a campaigner that removed a lease-less key.
const removedMsg = "removed a lease-less key blocking the campaign"

// removals returns the removal lines logged for key.
func removals(logs *observer.ObservedLogs, key string) []observer.LoggedEntry {
	var out []observer.LoggedEntry
	for _, e := range logs.FilterLevelExact(zapcore.ErrorLevel).All() {
		if strings.HasPrefix(e.Message, removedMsg) && e.ContextMap()["key"] == key {
			out = append(out, e)
		}
	}
	return out
}

// putLeaseless writes key under the prefix without a lease, as `etcdctl put`
// does, and returns its create revision.
func putLeaseless(ctx context.Context, t *testing.T, cli *clientv3.Client, key, value string) int64 {
	t.Helper()
	resp, err := cli.Put(ctx, key, value)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return resp.Header.Revision
}

// waitGone polls until key no longer exists.
func waitGone(ctx context.Context, t *testing.T, cli *clientv3.Client, key string) {
	t.Helper()
	for {
		resp, err := cli.Get(ctx, key, clientv3.WithCountOnly())
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		if resp.Count == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("lease-less key %s still exists: %v", key, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// logSettle bounds the wait for a removal line once its key is gone.
const logSettle = 2 * time.Second

// removalsOnceGone waits until key no longer exists and returns its removal
// lines, waiting up to logSettle for the first: the campaign that removes the
// key logs after its deleting transaction, so the key can be gone before the
// line is written.
func removalsOnceGone(ctx context.Context, t *testing.T, cli *clientv3.Client, logs *observer.ObservedLogs, key string) []observer.LoggedEntry {
	t.Helper()
	waitGone(ctx, t, cli, key)
	deadline := time.Now().Add(logSettle)
	for {
		got := removals(logs, key)
		if len(got) > 0 || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// observed returns a logger that writes through t and into the returned logs.
func observed(t *testing.T) (*zap.Logger, zapcore.Core, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(zapcore.NewTee(testLogger(t).Core(), core)), core, logs
}

func TestCampaigner_Leaseless(t *testing.T) {
	etcd := testenv.MustEtcd(t)
	cli := etcd.Client(t)

	t.Run("RemovedWhenItBlocksTheNextTerm", func(t *testing.T) {
		// The reported case: a key put by hand while a leader leads, then
		// the leader key deleted; the leader's next key is newer than the
		// stray one and would wait for it forever.
		ctx := testContext(t)
		_, core, logs := observed(t)
		w := newWorld(t, "/test/leaseless-next")
		w.logs = core
		w.start(cli, "a")
		first := w.waitLeader(ctx, 0)
		fake := w.prefix + "/0fake"
		fakeRev := putLeaseless(ctx, t, cli, fake, "x")
		if _, err := cli.Delete(ctx, first.term.Key); err != nil {
			t.Fatalf("delete the leader key: %v", err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*testTTL)
		defer cancel()
		next := w.waitLeader(wctx, first.term.Token)
		if next.term.Token <= fakeRev {
			t.Fatalf("token=%d, want > %d (the lease-less key's revision)", next.term.Token, fakeRev)
		}
		got := removalsOnceGone(ctx, t, cli, logs, fake)
		if len(got) != 1 {
			t.Fatalf("%d removal lines for %s, want 1; error lines: %v", len(got), fake, logs.FilterLevelExact(zapcore.ErrorLevel).All())
		}
		if f := got[0].ContextMap(); f["value"] != "x" || f["create_revision"] != fakeRev {
			t.Fatalf("removal line fields %v, want value x and create_revision %d", f, fakeRev)
		}
	})

	t.Run("RemovedBeforeAnyCampaign", func(t *testing.T) {
		// Older than every candidate: all of them wait for it, and one
		// transaction removes it.
		ctx := testContext(t)
		_, core, logs := observed(t)
		w := newWorld(t, "/test/leaseless-first")
		w.logs = core
		fake := w.prefix + "/0fake"
		putLeaseless(ctx, t, cli, fake, "x")
		w.start(cli, "a")
		w.start(etcd.Client(t), "b")
		wctx, cancel := context.WithTimeout(ctx, 10*testTTL)
		defer cancel()
		w.waitLeader(wctx, 0)
		if got := removalsOnceGone(ctx, t, cli, logs, fake); len(got) != 1 {
			t.Fatalf("%d removal lines for %s, want 1", len(got), fake)
		}
	})

	t.Run("NewKeyDuringTermDoesNotDepose", func(t *testing.T) {
		ctx := testContext(t)
		olg, core, logs := observed(t)
		w := newWorld(t, "/test/leaseless-during")
		w.logs = core
		o, err := NewObserver(cli, w.prefix, olg)
		if err != nil {
			t.Fatalf("NewObserver: %v", err)
		}
		runObserver(t, o)
		w.start(cli, "a")
		first := w.waitLeader(ctx, 0)
		w.start(etcd.Client(t), "b")
		waitCandidate(ctx, t, cli, w.prefix, "b", func(Candidate) bool { return true })

		fake := w.prefix + "/0fake"
		fakeRev := putLeaseless(ctx, t, cli, fake, "x")
		waitLeaseless(ctx, t, o, fake)
		seen := time.Now()
		// Renewals after more than a TTL: the term outlived the key.
		w.waitFor(ctx, "a renewal of a more than a TTL after the key appeared", func() bool {
			return w.renewed["a"].After(seen.Add(testTTL))
		})
		if cur, ok := w.leaderNow(); !ok || cur.term.Token != first.term.Token || len(w.terms()) != 1 {
			t.Fatalf("leader %+v (%v) after the lease-less key appeared, want the first term %d still running; terms: %s",
				cur.term, ok, first.term.Token, w.dump())
		}
		if l, ok := o.Current(); !ok || l.Token != first.term.Token {
			t.Fatalf("observer leader = %+v, %v; want token %d", l, ok, first.term.Token)
		}
		// Newer than both candidates' keys, it blocks nobody yet and stays
		// for status pages to report.
		if got := keysOf(ctx, t, cli, w.prefix); len(got) != 3 || got[2].Key != fake || got[2].Rev != fakeRev {
			t.Fatalf("candidate keys = %+v, want a, b and the lease-less key last", got)
		}
		if len(removals(logs, fake)) != 0 {
			t.Fatalf("the lease-less key was removed although it blocked nobody")
		}
		if !observerLogged(logs, fake) {
			t.Fatalf("the observer did not log the lease-less key at error level")
		}

		// The leader key deleted: b (older than the stray key) takes over,
		// and a's next campaign, behind it, removes it.
		if _, err := cli.Delete(ctx, first.term.Key); err != nil {
			t.Fatalf("delete the leader key: %v", err)
		}
		second := w.waitLeader(ctx, first.term.Token)
		if second.node != "b" {
			t.Fatalf("leader after the key deletion = %s, want b", second.node)
		}
		if got := removalsOnceGone(ctx, t, cli, logs, fake); len(got) != 1 {
			t.Fatalf("%d removal lines for %s, want 1", len(got), fake)
		}
		if cur, ok := w.leaderNow(); !ok || cur.term.Token != second.term.Token {
			t.Fatalf("leader %+v (%v) after the removal, want b's term %d; terms: %s", cur.term, ok, second.term.Token, w.dump())
		}
		w.waitFor(ctx, "the observer to forget the removed key", func() bool { return len(o.Leaseless()) == 0 })
	})
}

// waitLeaseless polls o until it reports key as lease-less.
func waitLeaseless(ctx context.Context, t *testing.T, o *Observer, key string) {
	t.Helper()
	for {
		for _, c := range o.Leaseless() {
			if c.Key == key {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("observer never reported the lease-less key %s: %v", key, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// observerLogged reports whether an observer logged key as lease-less, with
// the command that removes it.
func observerLogged(logs *observer.ObservedLogs, key string) bool {
	for _, e := range logs.FilterLevelExact(zapcore.ErrorLevel).All() {
		f := e.ContextMap()
		if strings.HasPrefix(e.Message, "lease-less key under the election prefix") && f["key"] == key && f["remove"] == RemoveCommand(key) {
			return true
		}
	}
	return false
}

func TestObserver_Leaseless(t *testing.T) {
	etcd := testenv.MustEtcd(t)
	cli := etcd.Client(t)
	ctx := testContext(t)
	prefix := "/test/observer-leaseless"
	fake := prefix + "/0fake"
	putLeaseless(ctx, t, cli, fake, "x")

	_, err := ReadLeader(ctx, cli, prefix)
	if !errors.Is(err, ErrNoLeader) || !strings.Contains(err.Error(), fake) {
		t.Fatalf("ReadLeader = %v, want ErrNoLeader naming %s", err, fake)
	}
	got, err := ReadLeaseless(ctx, cli, prefix)
	if err != nil || len(got) != 1 || got[0].Key != fake || got[0].Node != "x" {
		t.Fatalf("ReadLeaseless = %+v, %v; want %s", got, err, fake)
	}

	olg, _, logs := observed(t)
	o, err := NewObserver(cli, prefix, olg)
	if err != nil {
		t.Fatalf("NewObserver: %v", err)
	}
	runObserver(t, o)
	waitLeaseless(ctx, t, o, fake)
	if l, ok := o.Current(); ok {
		t.Fatalf("observer names %+v as the leader, want none while a lease-less key comes first", l)
	}
	if !observerLogged(logs, fake) {
		t.Fatalf("the observer did not log the lease-less key at error level with %q", RemoveCommand(fake))
	}
}

func TestRemoveCommand(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"/scheduler/election/0fake", "etcdctl del /scheduler/election/0fake"},
		{"/a b/c", "etcdctl del '/a b/c'"},
		{"/it's", `etcdctl del '/it'\''s'`},
		{"/x;rm -rf", "etcdctl del '/x;rm -rf'"},
		{"/$(id)", "etcdctl del '/$(id)'"},
	} {
		if got := RemoveCommand(tc.key); got != tc.want {
			t.Errorf("RemoveCommand(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}
