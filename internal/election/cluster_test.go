package election

import (
	"testing"
	"time"

	"scheduler/internal/testenv"
)

func TestCampaigner_Cluster(t *testing.T) {
	t.Run("EtcdLeaderStopped", func(t *testing.T) {
		ctx := testContext(t)
		etcd := testenv.MustEtcdCluster(t, 3)
		w := newWorld(t, "/test/etcd-leader")
		w.start(etcd.Client(t), "a")
		first := w.waitLeader(ctx, 0)
		w.start(etcd.Client(t), "b")
		obs := etcd.Client(t)
		waitCandidate(ctx, t, obs, w.prefix, "b", func(Candidate) bool { return true })

		etcd.Stop(t, etcd.LeaderIndex(t))
		stopped := time.Now()

		// Either a keeps its term, shown by a renewal sent after the member
		// stopped, or the term ends and someone else leads after it.
		var kept bool
		w.waitFor(ctx, "a renewal after the stop, or the end of a's term", func() bool {
			kept = w.renewed["a"].After(stopped)
			return kept || !w.spans[0].end.IsZero()
		})
		var want span
		if kept {
			want = first
			t.Logf("a kept its term %d", first.term.Token)
		} else {
			ended := w.waitEnded(ctx, first.term.Token)
			want = w.waitLeader(ctx, first.term.Token)
			t.Logf("a's term %d ended (%s); %s leads with token %d", first.term.Token, ended.reason, want.node, want.term.Token)
		}
		if w.overlap {
			t.Fatalf("two lead functions ran at once; terms: %s", w.dump())
		}
		w.assertTokensIncrease()
		l, err := ReadLeader(ctx, obs, w.prefix)
		if err != nil {
			t.Fatalf("ReadLeader: %v", err)
		}
		if cur, ok := w.leaderNow(); !ok || cur.term.Token != l.Token || l.Node != want.node {
			t.Fatalf("ReadLeader = %+v; running term %+v, %v; want %s", l, cur, ok, want.node)
		}
	})

	t.Run("QuorumLost", func(t *testing.T) {
		ctx := testContext(t)
		etcd := testenv.MustEtcdCluster(t, 3)
		w := newWorld(t, "/test/quorum")
		// a talks only to member 0, which will be left alone; b only to
		// member 1, which will stop.
		w.start(etcd.ClientFor(t, 0), "a")
		first := w.waitLeader(ctx, 0)
		w.start(etcd.ClientFor(t, 1), "b")
		waitCandidate(ctx, t, etcd.ClientFor(t, 2), w.prefix, "b", func(Candidate) bool { return true })

		etcd.Stop(t, 1)
		etcd.Stop(t, 2)
		ended := w.waitEnded(ctx, first.term.Token)
		lastRenewal := w.lastRenewal("a")
		if deadline := lastRenewal.Add(testTTL); ended.lostAt.IsZero() || ended.lostAt.After(deadline) {
			t.Fatalf("term cancelled at %v (%s), want no later than TTL after the last renewal (%v)", ended.lostAt, ended.reason, deadline)
		}
		t.Logf("term ended (%s) %v after the last renewal was sent", ended.reason, ended.lostAt.Sub(lastRenewal))

		// Nobody may lead without a quorum. Give them two TTLs to try.
		time.Sleep(2 * testTTL)
		if n := len(w.terms()); n != 1 {
			t.Fatalf("%d terms during the outage, want none after a's; terms: %s", n-1, w.dump())
		}

		etcd.Restart(t, 1)
		etcd.Restart(t, 2)
		second := w.waitLeader(ctx, first.term.Token)
		t.Logf("after quorum returned %s leads with token %d", second.node, second.term.Token)
		w.assertTokensIncrease()
		if w.overlap {
			t.Fatalf("two lead functions ran at once; terms: %s", w.dump())
		}
	})
}
