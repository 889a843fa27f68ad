package election

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler/internal/testenv"
)

// proxiedClient returns a client that reaches etcd only through proxy.
func proxiedClient(t *testing.T, proxy *testenv.Proxy) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(testenv.ClientConfig(proxy.Addr()))
	if err != nil {
		t.Fatalf("client via proxy %s: %v", proxy.Addr(), err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// watchDelete records when a DELETE of key (created at rev) reaches cli.
func watchDelete(ctx context.Context, t *testing.T, cli *clientv3.Client, key string, rev int64) <-chan time.Time {
	t.Helper()
	ch := make(chan time.Time, 1)
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	// Watching from the key's create revision delivers the DELETE even if
	// it happens before the watch is registered.
	wch := cli.Watch(wctx, key, clientv3.WithRev(rev), clientv3.WithFilterPut())
	wg.Go(func() {
		for wr := range wch {
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					ch <- time.Now()
					return
				}
			}
		}
	})
	return ch
}

// ttlPoll is one TimeToLive answer and when its request was sent.
type ttlPoll struct {
	sent time.Time
	ttl  int64
}

// pollTTL asks for the lease's remaining TTL every 20 ms until stopped.
func pollTTL(ctx context.Context, cli *clientv3.Client, id clientv3.LeaseID) (stop func() []ttlPoll) {
	pctx, cancel := context.WithCancel(ctx)
	var (
		wg    sync.WaitGroup
		polls []ttlPoll
	)
	wg.Go(func() {
		for pctx.Err() == nil {
			sent := time.Now()
			resp, err := cli.TimeToLive(pctx, id)
			if err == nil {
				polls = append(polls, ttlPoll{sent: sent, ttl: resp.TTL})
			}
			select {
			case <-pctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	return func() []ttlPoll {
		cancel()
		wg.Wait()
		return polls
	}
}

func TestCampaigner_Partition(t *testing.T) {
	etcd := testenv.MustEtcd(t)
	direct := etcd.Client(t)

	t.Run("StepsDownBeforeServerExpiry", func(t *testing.T) {
		ctx := testContext(t)
		proxy := testenv.MustProxy(t, etcd.Endpoint(0))
		w := newWorld(t, "/test/cut-off")
		// A 3 s TTL with a 1.5 s margin: at step-down the server still has
		// at least 1.5 s on the lease, which TimeToLive (whole seconds,
		// rounded down) can show.
		const ttl = 3 * time.Second
		w.start(proxiedClient(t, proxy), "a", withConfig(func(c *Config) { c.TTL, c.Margin = ttl, 1500*time.Millisecond }))
		first := w.waitLeader(ctx, 0)
		w.start(direct, "b", withConfig(func(c *Config) { c.TTL = ttl }))
		waitCandidate(ctx, t, direct, w.prefix, "b", func(Candidate) bool { return true })

		deleted := watchDelete(ctx, t, direct, first.term.Key, first.term.Token)
		stopPolling := pollTTL(ctx, direct, clientLease(first.term.Lease))
		proxy.Pause()
		ended := w.waitEnded(ctx, first.term.Token)
		var deletedAt time.Time
		select {
		case deletedAt = <-deleted:
		case <-ctx.Done():
			t.Fatalf("a's key never expired on the server")
		}
		polls := stopPolling()
		second := w.waitLeader(ctx, first.term.Token, "a")
		lastRenewal := w.lastRenewal("a")
		proxy.Resume()

		if ended.reason != ReasonRenewalDeadline {
			t.Fatalf("term ended with %q, want %q", ended.reason, ReasonRenewalDeadline)
		}
		stepDown := ended.end // lead had returned: a no longer acted as leader
		if !stepDown.Before(deletedAt) {
			t.Fatalf("a stepped down at %v, not before the server expired its key (delete seen at %v)", stepDown, deletedAt)
		}
		if !stepDown.Before(second.start) {
			t.Fatalf("a stepped down at %v, not before b was elected at %v", stepDown, second.start)
		}
		if deadline := lastRenewal.Add(ttl); ended.lostAt.After(deadline) {
			t.Fatalf("term cancelled at %v, later than TTL after the last renewal (%v)", ended.lostAt, deadline)
		}
		// The strongest evidence: a TimeToLive sent after the step-down
		// found the lease still alive on the server.
		var alive *ttlPoll
		for i := range polls {
			if polls[i].sent.After(stepDown) && polls[i].ttl >= 1 {
				alive = &polls[i]
				break
			}
		}
		if alive == nil {
			t.Fatalf("no TimeToLive sent after the step-down at %v saw the lease alive; polls: %+v", stepDown, polls)
		}
		t.Logf("stepped down %v after the last renewal was sent; lease seen alive (ttl %ds) %v later; delete seen %v after step-down; b elected %v after step-down",
			ended.lostAt.Sub(lastRenewal), alive.ttl, alive.sent.Sub(stepDown), deletedAt.Sub(stepDown), second.start.Sub(stepDown))
		if second.term.Token <= first.term.Token {
			t.Fatalf("b's token=%d, want > %d", second.term.Token, first.term.Token)
		}
	})

	t.Run("ShutdownWhileCutOff", func(t *testing.T) {
		ctx := testContext(t)
		proxy := testenv.MustProxy(t, etcd.Endpoint(0))
		w := newWorld(t, "/test/cut-off-shutdown")
		w.start(direct, "a")
		first := w.waitLeader(ctx, 0)
		b := w.start(proxiedClient(t, proxy), "b")
		waitCandidate(ctx, t, direct, w.prefix, "b", func(Candidate) bool { return true })

		// b waits in Campaign and cannot reach etcd. Its shutdown must not
		// wait for etcd (Campaign's own cleanup would, until the partition
		// heals).
		proxy.Pause()
		stopping := time.Now()
		b.stop(t)
		// Expected: one TTL, the bound on the revoke that cannot get
		// through. Left to Campaign's cleanup, shutdown waited until gRPC
		// keep-alive gave the connection up and beyond (about 6 TTLs).
		if took := time.Since(stopping); took > 3*testTTL {
			t.Fatalf("Run took %v (%.1f TTLs) to return after cancel while cut off, want about one TTL", took, took.Seconds()/testTTL.Seconds())
		}
		// The revoke could not get through: b's key expires with its lease.
		waitGone := func() bool {
			for _, c := range keysOf(ctx, t, direct, w.prefix) {
				if c.Node == "b" {
					return false
				}
			}
			return true
		}
		for !waitGone() {
			select {
			case <-ctx.Done():
				t.Fatalf("b's key still there: %v", ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
		if cur, ok := w.leaderNow(); !ok || cur.term.Token != first.term.Token {
			t.Fatalf("leader: %+v, %v; want a's term %d untouched", cur, ok, first.term.Token)
		}
		proxy.Resume()
	})
}
