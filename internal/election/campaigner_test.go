package election

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler/internal/testenv"
)

func TestCampaigner_Run(t *testing.T) {
	etcd := testenv.MustEtcd(t)
	cli := etcd.Client(t)

	t.Run("OneLeaderAmongCampaigners", func(t *testing.T) {
		ctx := testContext(t)
		w := newWorld(t, "/test/one-leader")
		nodes := map[string]*testNode{}
		for _, name := range []string{"a", "b", "c"} {
			nodes[name] = w.start(etcd.Client(t), name)
		}
		first := w.waitLeader(ctx, 0)

		l, err := ReadLeader(ctx, cli, w.prefix)
		if err != nil {
			t.Fatalf("ReadLeader: %v", err)
		}
		if l.Node != first.node || l.Token != first.term.Token || l.Key != first.term.Key {
			t.Fatalf("ReadLeader = %+v, want node %s token %d key %s", l, first.node, first.term.Token, first.term.Key)
		}
		if !l.Since.Equal(first.term.Since) {
			t.Fatalf("ReadLeader since=%v, want the term's %v", l.Since, first.term.Since)
		}
		if got, ok := nodes[first.node].c.Leading(); !ok || got.Token != first.term.Token {
			t.Fatalf("Leading() = %+v, %v; want token %d", got, ok, first.term.Token)
		}
		// The others queue behind the leader with later keys.
		for _, name := range []string{"a", "b", "c"} {
			waitCandidate(ctx, t, cli, w.prefix, name, func(Candidate) bool { return true })
		}
		if keys := keysOf(ctx, t, cli, w.prefix); len(keys) != 3 || keys[0].Node != first.node {
			t.Fatalf("candidate keys = %+v, want 3 with %s first", keys, first.node)
		}

		nodes[first.node].stop(t)
		second := w.waitLeader(ctx, first.term.Token, first.node)
		nodes[second.node].stop(t)
		third := w.waitLeader(ctx, second.term.Token, first.node, second.node)
		nodes[third.node].stop(t)

		w.assertTokensIncrease()
		if w.overlap {
			t.Fatalf("two lead functions ran at once; terms: %s", w.dump())
		}
		for _, sp := range w.terms() {
			if sp.reason != ReasonCancelled {
				t.Fatalf("term %d of %s ended with %q, want %q", sp.term.Token, sp.node, sp.reason, ReasonCancelled)
			}
		}
		if _, err := ReadLeader(ctx, cli, w.prefix); !errors.Is(err, ErrNoLeader) {
			t.Fatalf("ReadLeader after all stopped: %v, want ErrNoLeader", err)
		}
	})

	t.Run("TokensIncreaseAcrossTerms", func(t *testing.T) {
		ctx := testContext(t)
		w := newWorld(t, "/test/tokens")
		n := w.start(cli, "a", withHold(func(ctx context.Context, _ Term) error {
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
			}
			return nil
		}))
		w.waitFor(ctx, "four terms", func() bool { return len(w.spans) >= 4 })
		n.stop(t)
		w.assertTokensIncrease()
		for _, sp := range w.terms()[:3] {
			if sp.reason != ReasonLeadReturned {
				t.Fatalf("term %d ended with %q, want %q", sp.term.Token, sp.reason, ReasonLeadReturned)
			}
		}
	})

	t.Run("ResignHandsOver", func(t *testing.T) {
		ctx := testContext(t)
		w := newWorld(t, "/test/resign")
		a, b, first, _ := w.leaderAndCandidate(ctx, cli)

		a.stop(t)
		lastRenewal := w.lastRenewal("a")
		second := w.waitLeader(ctx, first.term.Token)
		if second.node != "b" {
			t.Fatalf("leader after resign = %s, want b", second.node)
		}
		// Handed over, not expired: b led before a's lease could have run
		// out on the server, and a's lease is revoked.
		if !second.start.Before(lastRenewal.Add(testTTL)) {
			t.Fatalf("b elected at %v, not before a's lease could expire at %v", second.start, lastRenewal.Add(testTTL))
		}
		ttl, err := cli.TimeToLive(ctx, clientLease(first.term.Lease))
		if err != nil {
			t.Fatalf("TimeToLive: %v", err)
		}
		if ttl.TTL != -1 {
			t.Fatalf("a's lease TTL=%d after shutdown, want -1 (revoked)", ttl.TTL)
		}
		if w.overlap {
			t.Fatalf("two lead functions ran at once; terms: %s", w.dump())
		}
		b.stop(t)
	})

	t.Run("RevokedLeaseHandsOver", func(t *testing.T) {
		ctx := testContext(t)
		w := newWorld(t, "/test/revoke")
		_, _, first, _ := w.leaderAndCandidate(ctx, cli)

		// Kill a's session from outside.
		if _, err := cli.Revoke(ctx, clientLease(first.term.Lease)); err != nil {
			t.Fatalf("revoke: %v", err)
		}
		ended := w.waitEnded(ctx, first.term.Token)
		if ended.reason != ReasonKeyDeleted && ended.reason != ReasonSessionDone && ended.reason != ReasonLeaseGone {
			t.Fatalf("term ended with %q, want key deleted, session done or lease gone", ended.reason)
		}
		second := w.waitLeader(ctx, first.term.Token, "a")
		if second.node != "b" {
			t.Fatalf("leader after revoke = %s, want b", second.node)
		}
		// a campaigns again, with a new key behind b's.
		again := waitCandidate(ctx, t, cli, w.prefix, "a", func(c Candidate) bool { return c.Rev > second.term.Token })
		if again.Lease == first.term.Lease {
			t.Fatalf("a campaigns again on its revoked lease %x", again.Lease)
		}
		w.assertTokensIncrease()
	})

	t.Run("DeletedKeyEndsTerm", func(t *testing.T) {
		ctx := testContext(t)
		w := newWorld(t, "/test/delete")
		w.start(cli, "a")
		first := w.waitLeader(ctx, 0)
		if _, err := cli.Delete(ctx, first.term.Key); err != nil {
			t.Fatalf("delete %s: %v", first.term.Key, err)
		}
		ended := w.waitEnded(ctx, first.term.Token)
		if ended.reason != ReasonKeyDeleted {
			t.Fatalf("term ended with %q, want %q", ended.reason, ReasonKeyDeleted)
		}
		w.waitLeader(ctx, first.term.Token)
		w.assertTokensIncrease()
	})

	// A put by hand over the leader key (its own value, no lease) unbinds it from the leader's
	// lease: the key would outlive the leader and block every campaign, and status reads no
	// leader while the term goes on. The term ends, the key goes with the leader's resignation,
	// and the next term's token is higher.
	t.Run("OverwrittenKeyEndsTerm", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			value func(Term) string
			opts  func(Term) []clientv3.OpOption
		}{
			{"NoLease", func(tm Term) string { return tm.Node }, func(Term) []clientv3.OpOption { return nil }},
			{"OtherValue", func(Term) string { return "x" }, func(tm Term) []clientv3.OpOption {
				return []clientv3.OpOption{clientv3.WithLease(clientLease(tm.Lease))}
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ctx := testContext(t)
				w := newWorld(t, "/test/overwrite-"+tc.name)
				w.start(cli, "a")
				first := w.waitLeader(ctx, 0)
				if _, err := cli.Put(ctx, first.term.Key, tc.value(first.term), tc.opts(first.term)...); err != nil {
					t.Fatalf("put %s: %v", first.term.Key, err)
				}
				ended := w.waitEnded(ctx, first.term.Token)
				if ended.reason != ReasonKeyOverwritten {
					t.Fatalf("term ended with %q, want %q", ended.reason, ReasonKeyOverwritten)
				}
				second := w.waitLeader(ctx, first.term.Token)
				if second.node != "a" {
					t.Fatalf("leader after the overwrite = %s, want a again", second.node)
				}
				if resp, err := cli.Get(ctx, first.term.Key); err != nil || len(resp.Kvs) != 0 {
					t.Fatalf("the overwritten key %s is still there (err %v)", first.term.Key, err)
				}
				w.assertTokensIncrease()
			})
		}
	})

	t.Run("LeadErrorStartsNewTerm", func(t *testing.T) {
		ctx := testContext(t)
		w := newWorld(t, "/test/lead-error")
		failed := false
		w.start(cli, "a", withHold(func(ctx context.Context, _ Term) error {
			if !failed {
				failed = true
				return errors.New("job table broken")
			}
			<-ctx.Done()
			return nil
		}))
		w.waitFor(ctx, "a term", func() bool { return len(w.spans) > 0 })
		first := w.waitEnded(ctx, w.terms()[0].term.Token)
		if first.reason != ReasonLeadFailed {
			t.Fatalf("term ended with %q, want %q", first.reason, ReasonLeadFailed)
		}
		w.waitLeader(ctx, first.term.Token)
	})

	t.Run("CampaignEndsWithItsSession", func(t *testing.T) {
		ctx := testContext(t)
		w := newWorld(t, "/test/campaign-session")
		a, _, first, stale := w.leaderAndCandidate(ctx, cli)

		// b's lease dies while b waits in Campaign. b must give that
		// campaign up and queue again with a new lease and key; left
		// alone, Campaign would wait on and return nil once a resigns.
		if _, err := cli.Revoke(ctx, clientLease(stale.Lease)); err != nil {
			t.Fatalf("revoke: %v", err)
		}
		fresh := waitCandidate(ctx, t, cli, w.prefix, "b", func(c Candidate) bool { return c.Rev > stale.Rev })
		if fresh.Lease == stale.Lease {
			t.Fatalf("b queues again on its revoked lease %x", fresh.Lease)
		}
		a.stop(t)
		second := w.waitLeader(ctx, first.term.Token)
		if second.node != "b" || second.term.Token != fresh.Rev {
			t.Fatalf("leader %s token=%d, want b with its new key's revision %d", second.node, second.term.Token, fresh.Rev)
		}
	})

	t.Run("CampaignReturningWithoutKeyIsNotLeadership", func(t *testing.T) {
		ctx := testContext(t)
		w := newWorld(t, "/test/campaign-nil")
		a, _, first, stale := w.leaderAndCandidate(ctx, cli)

		// Delete b's key but leave its lease alive: nothing tells b while
		// it waits, and when a resigns Campaign returns nil with the
		// deleted key's revision. The ownership check must catch that.
		if _, err := cli.Delete(ctx, stale.Key); err != nil {
			t.Fatalf("delete %s: %v", stale.Key, err)
		}
		a.stop(t)
		second := w.waitLeader(ctx, first.term.Token, "a")
		if second.term.Token <= stale.Rev {
			t.Fatalf("b leads with token=%d, want > %d (its deleted key)", second.term.Token, stale.Rev)
		}
		for _, sp := range w.terms() {
			if sp.term.Token == stale.Rev {
				t.Fatalf("b led with the deleted key's token %d", stale.Rev)
			}
		}
	})

	t.Run("ShutdownWhileCampaigning", func(t *testing.T) {
		ctx := testContext(t)
		w := newWorld(t, "/test/shutdown-campaign")
		_, b, first, _ := w.leaderAndCandidate(ctx, cli)
		b.stop(t)
		for _, c := range keysOf(ctx, t, cli, w.prefix) {
			if c.Node == "b" {
				t.Fatalf("b's key %s left behind after shutdown", c.Key)
			}
		}
		if cur, ok := w.leaderNow(); !ok || cur.term.Token != first.term.Token {
			t.Fatalf("leader after b's shutdown: %+v, %v; want a's term %d untouched", cur, ok, first.term.Token)
		}
	})
}
