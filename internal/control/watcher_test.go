package control

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"scheduler/internal/testenv"
)

func TestWatcher_Run(t *testing.T) {
	t.Parallel()
	e := testenv.MustEtcd(t)

	t.Run("SeesPauseAndResumeByAnotherClient", func(t *testing.T) {
		ctx := testCtx(t)
		const prefix = "/w1/election"
		leader := mustStore(t, e.Client(t), prefix)
		operator := mustStore(t, e.Client(t), prefix)
		if _, err := operator.Pause(ctx, "early", "op"); err != nil {
			t.Fatalf("pause: %v", err)
		}
		w := leader.NewWatcher(testLogger(t))
		if w.Paused("early") {
			t.Fatalf("paused before the first list")
		}
		startWatcher(t, w)
		waitReady(t, ctx, w)
		if !w.Paused("early") {
			t.Fatalf("a job paused before Run is not paused once ready")
		}
		if _, err := operator.Pause(ctx, "invoices", "op"); err != nil {
			t.Fatalf("pause: %v", err)
		}
		testenv.Eventually(t, testTimeout, 5*time.Millisecond, "invoices paused", func() bool { return w.Paused("invoices") })
		if _, err := operator.Resume(ctx, "invoices"); err != nil {
			t.Fatalf("resume: %v", err)
		}
		testenv.Eventually(t, testTimeout, 5*time.Millisecond, "invoices resumed", func() bool { return !w.Paused("invoices") })
		if !w.Paused("early") || w.Paused("stock") {
			t.Fatalf("paused early=%v stock=%v, want true false", w.Paused("early"), w.Paused("stock"))
		}
		assertNoElectionKeys(t, ctx, operator.cli, prefix)
	})

	t.Run("DeliversRequests", func(t *testing.T) {
		ctx := testCtx(t)
		const prefix = "/w2/election"
		leader := mustStore(t, e.Client(t), prefix)
		operator := mustStore(t, e.Client(t), prefix)
		t0 := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)

		// Requests made while no watcher runs: delivered at start, oldest
		// first, whatever the job names.
		var before []Request
		for _, tc := range []struct {
			job string
			sec int
		}{{"zulu", 1}, {"alpha", 3}, {"mike", 2}} {
			r, err := operator.Trigger(ctx, tc.job, "op", t0.Add(time.Duration(tc.sec)*time.Second))
			if err != nil {
				t.Fatalf("trigger: %v", err)
			}
			before = append(before, r)
		}
		w := leader.NewWatcher(testLogger(t))
		startWatcher(t, w)
		var got []Request
		for range before {
			got = append(got, recv(t, ctx, w))
		}
		if want := []string{before[0].Key, before[2].Key, before[1].Key}; !slices.Equal(keysOf(got), want) {
			t.Fatalf("delivered %q, want %q", keysOf(got), want)
		}
		if got[0].Job != "zulu" || got[0].By != "op" || !got[0].At.Equal(t0.Add(time.Second)) {
			t.Fatalf("first request = %+v, want zulu by op at %v", got[0], t0.Add(time.Second))
		}

		// A new request is delivered as it is written.
		late, err := operator.Trigger(ctx, "stock", "op", t0.Add(time.Hour))
		if err != nil {
			t.Fatalf("trigger: %v", err)
		}
		if r := recv(t, ctx, w); r.Key != late.Key || r.Job != "stock" || !r.At.Equal(late.At) {
			t.Fatalf("delivered %+v, want %+v", r, late)
		}

		// Done removes them for good.
		for _, r := range append(got, late) {
			if err := leader.Done(ctx, r); err != nil {
				t.Fatalf("done: %v", err)
			}
		}
		if rs, err := leader.Requests(ctx); err != nil || len(rs) != 0 {
			t.Fatalf("requests after done = %+v, %v; want none", rs, err)
		}
		// Nothing else is delivered: a request written now is the next one.
		next, err := operator.Trigger(ctx, "next", "op", t0.Add(2*time.Hour))
		if err != nil {
			t.Fatalf("trigger: %v", err)
		}
		if r := recv(t, ctx, w); r.Key != next.Key {
			t.Fatalf("delivered %+v, want %+v", r, next)
		}
		assertNoElectionKeys(t, ctx, operator.cli, prefix)
	})

	t.Run("RunsOnce", func(t *testing.T) {
		ctx := testCtx(t)
		w := mustStore(t, e.Client(t), "/w3/election").NewWatcher(nil)
		startWatcher(t, w)
		waitReady(t, ctx, w)
		if err := w.Run(ctx); err == nil {
			t.Fatalf("second Run returned nil")
		}
	})

	t.Run("ClosesRequestsWhenDone", func(t *testing.T) {
		ctx, cancel := context.WithCancel(testCtx(t))
		w := mustStore(t, e.Client(t), "/w4/election").NewWatcher(nil)
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		waitReady(t, testCtx(t), w)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run = %v, want nil after cancel", err)
		}
		if _, ok := <-w.Requests(); ok {
			t.Fatalf("requests channel open after Run returned")
		}
	})
}

// TestWatcher_Compaction makes the watch start from a compacted revision:
// the Watcher must list again, pick up what changed meanwhile, and go on
// watching.
func TestWatcher_Compaction(t *testing.T) {
	t.Parallel()
	e := testenv.MustEtcd(t)
	ctx := testCtx(t)
	const prefix = "/compact/election"
	leader := mustStore(t, e.Client(t), prefix)
	operator := mustStore(t, e.Client(t), prefix)
	t0 := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)

	w := leader.NewWatcher(testLogger(t))
	var lists, compactedAt atomic.Int64
	w.afterList = func(rev int64) {
		if lists.Add(1) != 1 {
			return
		}
		// Between the first list and its watches: change state, then
		// compact past the revision the watches will start from.
		if _, err := operator.Pause(ctx, "between", "op"); err != nil {
			t.Errorf("pause: %v", err)
		}
		r, err := operator.Trigger(ctx, "between", "op", t0)
		if err != nil {
			t.Errorf("trigger: %v", err)
			return
		}
		cur, err := operator.cli.Get(ctx, r.Key)
		if err != nil {
			t.Errorf("get: %v", err)
			return
		}
		if _, err := operator.cli.Compact(ctx, cur.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
			t.Errorf("compact: %v", err)
		}
		if cur.Header.Revision <= rev+1 {
			t.Errorf("compacted at %d, want past the watch start %d", cur.Header.Revision, rev+1)
		}
		compactedAt.Store(cur.Header.Revision)
	}
	startWatcher(t, w)

	if r := recv(t, ctx, w); r.Job != "between" || !r.At.Equal(t0) {
		t.Fatalf("delivered %+v, want the request made before the compaction", r)
	}
	if n := lists.Load(); n < 2 {
		t.Fatalf("listed %d times, want a second list after the compaction", n)
	}
	if !w.Paused("between") {
		t.Fatalf("pause made before the compaction not seen")
	}
	// It keeps watching.
	if _, err := operator.Resume(ctx, "between"); err != nil {
		t.Fatalf("resume: %v", err)
	}
	testenv.Eventually(t, testTimeout, 5*time.Millisecond, "resume after the compaction", func() bool { return !w.Paused("between") })
	after, err := operator.Trigger(ctx, "after", "op", t0.Add(time.Minute))
	if err != nil {
		t.Fatalf("trigger: %v", err)
	}
	if r := recv(t, ctx, w); r.Key != after.Key {
		t.Fatalf("delivered %+v, want %+v", r, after)
	}
	if n := lists.Load(); n != 2 {
		t.Fatalf("listed %d times, want 2: one compaction, one re-list", n)
	}
	t.Logf("compacted at revision %d; lists %d", compactedAt.Load(), lists.Load())
}

// TestWatcher_MemberOutage cuts the Watcher's only etcd member off while
// the state changes and the history is compacted on the others; once the
// member is back, the Watcher catches up (by a re-list if its resumed
// watch finds the revision compacted) and goes on watching.
func TestWatcher_MemberOutage(t *testing.T) {
	t.Parallel()
	e := testenv.MustEtcdCluster(t, 3)
	ctx := testCtx(t)
	const prefix = "/outage/election"
	leader := mustStore(t, e.ClientFor(t, 0), prefix)
	operator := mustStore(t, e.ClientFor(t, 1), prefix)
	t0 := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)

	w := leader.NewWatcher(testLogger(t))
	var lists atomic.Int64
	w.afterList = func(int64) { lists.Add(1) }
	startWatcher(t, w)
	if _, err := operator.Pause(ctx, "before", "op"); err != nil {
		t.Fatalf("pause: %v", err)
	}
	testenv.Eventually(t, testTimeout, 5*time.Millisecond, "pause seen", func() bool { return w.Paused("before") })

	e.Stop(t, 0)
	e.LeaderIndex(t)
	if _, err := operator.Resume(ctx, "before"); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if _, err := operator.Pause(ctx, "during", "op"); err != nil {
		t.Fatalf("pause: %v", err)
	}
	during, err := operator.Trigger(ctx, "during", "op", t0)
	if err != nil {
		t.Fatalf("trigger: %v", err)
	}
	cur, err := operator.cli.Get(ctx, during.Key)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if _, err := operator.cli.Compact(ctx, cur.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("compact: %v", err)
	}
	e.Restart(t, 0)

	if r := recv(t, ctx, w); r.Key != during.Key {
		t.Fatalf("delivered %+v, want %+v", r, during)
	}
	testenv.Eventually(t, testTimeout, 5*time.Millisecond, "state of the outage seen", func() bool { return w.Paused("during") && !w.Paused("before") })
	if _, err := operator.Pause(ctx, "after", "op"); err != nil {
		t.Fatalf("pause: %v", err)
	}
	testenv.Eventually(t, testTimeout, 5*time.Millisecond, "pause after the outage seen", func() bool { return w.Paused("after") })
	t.Logf("lists: %d (2 or more: the resumed watch found its revision compacted)", lists.Load())
}
