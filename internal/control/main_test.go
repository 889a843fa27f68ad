package control

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"scheduler"
	"scheduler/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testTimeout bounds every test that talks to etcd.
const testTimeout = 60 * time.Second

// testCtx returns a context bounded by testTimeout, cancelled when the test
// ends.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// mustStore returns a Store of prefix on cli.
func mustStore(t testing.TB, cli *clientv3.Client, prefix string) *Store {
	t.Helper()
	s, err := New(cli, prefix)
	if err != nil {
		t.Fatalf("new store of %q: %v", prefix, err)
	}
	return s
}

// etcdStore starts an embedded etcd member for the test and returns a
// context bounded by testTimeout and a Store of prefix on the member.
func etcdStore(t *testing.T, prefix string) (context.Context, *Store) {
	t.Helper()
	e := testenv.MustEtcd(t)
	return testCtx(t), mustStore(t, e.Client(t), prefix)
}

// startWatcher runs w until the test ends; the cleanup stops it, waits for
// Run to return and checks that it returned nil and closed Requests.
func startWatcher(t *testing.T, w *Watcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var err error
	wg.Go(func() { err = w.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if err != nil {
			t.Errorf("watcher run: %v", err)
		}
		for range w.Requests() { // drains what is left; ends because Run closed it
		}
	})
}

// startRun runs run in the background; stop cancels its context, waits for it to return and
// checks that it returned nil.
func startRun(ctx context.Context, t *testing.T, run func(context.Context) error) (stop func()) {
	t.Helper()
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := run(rctx); err != nil {
			t.Errorf("Run=%v, want nil", err)
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// hashedReplica returns replica a of version v, with the table hash that hash holds at the
// time it is published.
func hashedReplica(hash *atomic.Value) func() scheduler.Replica {
	return func() scheduler.Replica {
		return scheduler.Replica{Node: "a", Version: "v", TableHash: hash.Load().(string)}
	}
}

// testLogger logs through t at info level and above.
func testLogger(tb testing.TB) *zap.Logger {
	return zaptest.NewLogger(tb, zaptest.Level(zap.InfoLevel))
}

// waitReady waits until w has listed once.
func waitReady(t *testing.T, ctx context.Context, w *Watcher) {
	t.Helper()
	select {
	case <-w.Ready():
	case <-ctx.Done():
		t.Fatalf("watcher not ready: %v", ctx.Err())
	}
}

// recv returns the next request from w, failing the test when ctx ends
// first or the channel is closed.
func recv(t *testing.T, ctx context.Context, w *Watcher) Request {
	t.Helper()
	select {
	case r, ok := <-w.Requests():
		if !ok {
			t.Fatalf("requests channel closed")
		}
		return r
	case <-ctx.Done():
		t.Fatalf("waiting for a request: %v", ctx.Err())
	}
	return Request{}
}

// assertNoElectionKeys fails the test if anything exists under prefix + "/",
// the range the election owns.
func assertNoElectionKeys(t *testing.T, ctx context.Context, cli *clientv3.Client, prefix string) {
	t.Helper()
	resp, err := cli.Get(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatalf("get election range %s/: %v", prefix, err)
	}
	for _, kv := range resp.Kvs {
		t.Errorf("key %s lies in the election range %s/", kv.Key, prefix)
	}
}
