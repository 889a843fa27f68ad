package election

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"scheduler/internal/testenv"
)

// runObserver runs an Observer of prefix on cli until the test ends.
func runObserver(t *testing.T, o *Observer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := o.Run(ctx); err != nil {
			t.Errorf("Observer.Run = %v, want nil", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// waitObserved polls o until ok holds for its view.
func waitObserved(ctx context.Context, t *testing.T, o *Observer, what string, ok func(Leader, bool) bool) Leader {
	t.Helper()
	for {
		l, known := o.Current()
		if ok(l, known) {
			return l
		}
		select {
		case <-ctx.Done():
			t.Fatalf("observer never saw %s; last view %+v, %v", what, l, known)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestObserver(t *testing.T) {
	etcd := testenv.MustEtcd(t)
	cli := etcd.Client(t)

	t.Run("FollowsLeader", func(t *testing.T) {
		ctx := testContext(t)
		w := newWorld(t, "/test/observer")
		o, err := NewObserver(cli, w.prefix, testLogger(t))
		if err != nil {
			t.Fatalf("NewObserver: %v", err)
		}
		runObserver(t, o)

		a := w.start(cli, "a")
		first := w.waitLeader(ctx, 0)
		// The candidate key shows up before the term record; the observer
		// takes the leader's own start time once the record is there.
		got := waitObserved(ctx, t, o, "a", func(l Leader, ok bool) bool {
			return ok && l.Token == first.term.Token && l.Since.Equal(first.term.Since)
		})
		if got.Node != "a" || got.Key != first.term.Key {
			t.Fatalf("observed %+v, want node a key %s", got, first.term.Key)
		}

		b := w.start(cli, "b")
		waitCandidate(ctx, t, cli, w.prefix, "b", func(Candidate) bool { return true })
		a.stop(t)
		second := w.waitLeader(ctx, first.term.Token)
		got = waitObserved(ctx, t, o, "b", func(l Leader, ok bool) bool {
			return ok && l.Token == second.term.Token && l.Since.Equal(second.term.Since)
		})
		if got.Node != "b" {
			t.Fatalf("observed %+v, want node b", got)
		}

		b.stop(t)
		waitObserved(ctx, t, o, "no leader", func(_ Leader, ok bool) bool { return !ok })
	})

	t.Run("RecoversFromLostConnection", func(t *testing.T) {
		ctx := testContext(t)
		proxy := testenv.MustProxy(t, etcd.Endpoint(0))
		w := newWorld(t, "/test/observer-cut")
		o, err := NewObserver(proxiedClient(t, proxy), w.prefix, testLogger(t))
		if err != nil {
			t.Fatalf("NewObserver: %v", err)
		}
		runObserver(t, o)
		a := w.start(cli, "a")
		first := w.waitLeader(ctx, 0)
		waitObserved(ctx, t, o, "a", func(l Leader, ok bool) bool { return ok && l.Token == first.term.Token })

		proxy.Cut()
		w.start(cli, "b")
		waitCandidate(ctx, t, cli, w.prefix, "b", func(Candidate) bool { return true })
		a.stop(t)
		second := w.waitLeader(ctx, first.term.Token)
		proxy.Resume()
		waitObserved(ctx, t, o, "b", func(l Leader, ok bool) bool { return ok && l.Token == second.term.Token && l.Node == "b" })
	})

	t.Run("ForeignCandidate", func(t *testing.T) {
		// A candidate that is not a Campaigner, e.g. `etcdctl elect PREFIX
		// maintenance`, publishes no term record: the observer dates it
		// from its first sighting, ReadLeader leaves Since zero.
		ctx := testContext(t)
		prefix := "/test/observer-foreign"
		o, err := NewObserver(cli, prefix, testLogger(t))
		if err != nil {
			t.Fatalf("NewObserver: %v", err)
		}
		runObserver(t, o)
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(2))
		if err != nil {
			t.Fatalf("session: %v", err)
		}
		defer sess.Close()
		el := concurrency.NewElection(sess, prefix)
		before := time.Now()
		if err := el.Campaign(ctx, "maintenance"); err != nil {
			t.Fatalf("campaign: %v", err)
		}
		got := waitObserved(ctx, t, o, "maintenance", func(l Leader, ok bool) bool { return ok && l.Node == "maintenance" })
		if got.Token != el.Rev() || got.Since.Before(before) {
			t.Fatalf("observed %+v, want token %d since after %v", got, el.Rev(), before)
		}
		l, err := ReadLeader(ctx, cli, prefix)
		if err != nil || l.Node != "maintenance" || l.Token != el.Rev() || !l.Since.IsZero() {
			t.Fatalf("ReadLeader = %+v, %v; want maintenance, token %d, zero since", l, err, el.Rev())
		}
		if err := el.Resign(ctx); err != nil {
			t.Fatalf("resign: %v", err)
		}
	})
}

func TestReadLeader(t *testing.T) {
	etcd := testenv.MustEtcd(t)
	cli := etcd.Client(t)
	ctx := testContext(t)

	if _, err := ReadLeader(ctx, cli, "/test/nobody"); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("ReadLeader of an empty election: %v, want ErrNoLeader", err)
	}

	// What `etcdctl elect --listen PREFIX` prints comes from Observe on the
	// same election: the leader's node name, at the token's revision.
	w := newWorld(t, "/test/etcdctl")
	w.start(cli, "replica-1")
	first := w.waitLeader(ctx, 0)
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(2))
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	defer sess.Close()
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, ok := <-concurrency.NewElection(sess, w.prefix).Observe(octx)
	if !ok {
		t.Fatalf("Observe closed")
	}
	kv := resp.Kvs[0]
	if string(kv.Value) != "replica-1" || kv.CreateRevision != first.term.Token {
		t.Fatalf("Observe saw %s=%s at create revision %d, want replica-1 at %d", kv.Key, kv.Value, kv.CreateRevision, first.term.Token)
	}
	// The term record lives outside the election prefix.
	if keys := keysOf(ctx, t, cli, w.prefix); len(keys) != 1 {
		t.Fatalf("keys under %s/: %+v, want only the leader key", w.prefix, keys)
	}
}
