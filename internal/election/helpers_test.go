package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"scheduler/internal/testenv"
)

// TestMain checks for leaked goroutines (testenv ignores those of stopped
// etcd members).
func TestMain(m *testing.M) { testenv.Main(m) }

const (
	// testTTL is the lease TTL of most tests: long enough that a renewal
	// missed on a busy machine does not end a term (the default margin
	// leaves 1.5 s after the last renewal, with renewals every 0.67 s),
	// short enough for takeovers by expiry to be quick.
	testTTL = 2 * time.Second
	// testTimeout bounds every test that talks to etcd.
	testTimeout = 60 * time.Second
)

// testContext returns a context bounded by testTimeout, cancelled when the
// test ends.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// testLogger logs through t at info level and above.
func testLogger(tb testing.TB) *zap.Logger {
	return zaptest.NewLogger(tb, zaptest.Level(zap.InfoLevel))
}

// span is one term as lived by a node's lead function.
type span struct {
	node   string
	term   Term
	start  time.Time // lead called
	end    time.Time // lead returned; zero while it runs
	lostAt time.Time // LostError.At of the term context's cause, if any
	reason Reason    // from OnLost; empty while it runs
}

// world records the terms of all nodes of one election.
type world struct {
	t      *testing.T
	prefix string

	mu      sync.Mutex
	spans   []*span
	active  int
	overlap bool                 // two lead functions ran at once
	renewed map[string]time.Time // node -> send time of its last successful renewal
	changed chan struct{}        // closed on every change
	logs    zapcore.Core         // if set, every node also logs here
}

func newWorld(t *testing.T, prefix string) *world {
	return &world{t: t, prefix: prefix, renewed: make(map[string]time.Time), changed: make(chan struct{})}
}

// notify wakes waiters; w.mu must be held.
func (w *world) notify() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// waitFor waits until cond holds (called with w.mu held) or ctx ends.
func (w *world) waitFor(ctx context.Context, what string, cond func() bool) {
	w.t.Helper()
	for {
		w.mu.Lock()
		ok, ch := cond(), w.changed
		w.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			w.t.Fatalf("waiting for %s: %v; terms: %s", what, ctx.Err(), w.dump())
		}
	}
}

// dump describes all terms, for failure messages.
func (w *world) dump() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := ""
	for _, sp := range w.spans {
		s += fmt.Sprintf("\n  %s token=%d reason=%q running=%v", sp.node, sp.term.Token, sp.reason, sp.end.IsZero())
	}
	return s
}

// terms returns a copy of the spans so far.
func (w *world) terms() []span {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]span, len(w.spans))
	for i, sp := range w.spans {
		out[i] = *sp
	}
	return out
}

// leaderNow returns the running span, if exactly one runs.
func (w *world) leaderNow() (span, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var cur *span
	for _, sp := range w.spans {
		if sp.end.IsZero() {
			if cur != nil {
				return span{}, false
			}
			cur = sp
		}
	}
	if cur == nil {
		return span{}, false
	}
	return *cur, true
}

// waitLeader waits until some node other than the excluded ones leads with
// a token above after, and returns its term.
func (w *world) waitLeader(ctx context.Context, after int64, exclude ...string) span {
	w.t.Helper()
	var got span
	w.waitFor(ctx, fmt.Sprintf("a leader with token > %d", after), func() bool {
		for _, sp := range w.spans {
			if !sp.end.IsZero() || sp.term.Token <= after || contains(exclude, sp.node) {
				continue
			}
			got = *sp
			return true
		}
		return false
	})
	return got
}

// waitEnded waits until the term with token has ended and returns it.
func (w *world) waitEnded(ctx context.Context, token int64) span {
	w.t.Helper()
	var got span
	w.waitFor(ctx, fmt.Sprintf("the end of term %d", token), func() bool {
		for _, sp := range w.spans {
			if sp.term.Token == token && !sp.end.IsZero() && sp.reason != "" {
				got = *sp
				return true
			}
		}
		return false
	})
	return got
}

// lastRenewal returns the send time of node's last successful renewal.
func (w *world) lastRenewal(node string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.renewed[node]
}

// assertTokensIncrease fails the test unless the terms started in strictly
// increasing token order.
func (w *world) assertTokensIncrease() {
	w.t.Helper()
	var last int64
	for _, sp := range w.terms() {
		if sp.term.Token <= last {
			w.t.Fatalf("token=%d after %d, want strictly increasing; terms: %s", sp.term.Token, last, w.dump())
		}
		last = sp.term.Token
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// testNode is one campaigner running in the background.
type testNode struct {
	name   string
	c      *Campaigner
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// nodeOption adjusts a node's configuration or lead function.
type nodeOption func(*Config, *LeadFunc)

// withHold replaces the default lead function (hold until cancelled).
func withHold(hold LeadFunc) nodeOption {
	return func(_ *Config, l *LeadFunc) { *l = hold }
}

// withConfig adjusts the configuration.
func withConfig(f func(*Config)) nodeOption {
	return func(c *Config, _ *LeadFunc) { f(c) }
}

// holdUntilCancelled is the default lead function.
func holdUntilCancelled(ctx context.Context, _ Term) error {
	<-ctx.Done()
	return nil
}

// start runs a campaigner for node on cli until stop or the end of the
// test.
func (w *world) start(cli *clientv3.Client, name string, opts ...nodeOption) *testNode {
	w.t.Helper()
	hold := LeadFunc(holdUntilCancelled)
	cfg := Config{Prefix: w.prefix, Node: name, TTL: testTTL}
	for _, o := range opts {
		o(&cfg, &hold)
	}
	cfg.Events = Events{
		OnLost: func(t Term, r Reason) {
			w.mu.Lock()
			defer w.mu.Unlock()
			for _, sp := range w.spans {
				if sp.term.Token == t.Token {
					sp.reason = r
				}
			}
			w.notify()
		},
		OnRenewed: func(sent time.Time, _ time.Duration) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.renewed[name] = sent
			w.notify()
		},
	}
	lg := testLogger(w.t)
	if w.logs != nil {
		lg = zap.New(zapcore.NewTee(lg.Core(), w.logs))
	}
	c, err := New(cli, cfg, lg)
	if err != nil {
		w.t.Fatalf("New(%s): %v", name, err)
	}
	lead := func(ctx context.Context, t Term) error {
		sp := &span{node: name, term: t, start: time.Now()}
		w.mu.Lock()
		w.spans = append(w.spans, sp)
		w.active++
		if w.active > 1 {
			w.overlap = true
		}
		w.notify()
		w.mu.Unlock()

		err := hold(ctx, t)

		end := time.Now()
		var lost *LostError
		w.mu.Lock()
		sp.end = end
		if errors.As(context.Cause(ctx), &lost) {
			sp.lostAt = lost.At
		}
		w.active--
		w.notify()
		w.mu.Unlock()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &testNode{name: name, c: c, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(n.done)
		n.err = c.Run(ctx, lead)
	}()
	w.t.Cleanup(func() { n.stop(w.t) })
	return n
}

// stop cancels the node's Run and waits for it to return.
func (n *testNode) stop(t *testing.T) {
	t.Helper()
	n.cancel()
	select {
	case <-n.done:
	case <-time.After(testTimeout):
		t.Fatalf("node %s: Run did not return within %v of cancel", n.name, testTimeout)
	}
	if n.err != nil {
		t.Errorf("node %s: Run = %v, want nil", n.name, n.err)
	}
}

// leaderAndCandidate starts node a on cli and waits until it leads, then
// starts node b and waits until b's candidate key is queued behind a's. It
// returns both nodes, a's term and b's key.
func (w *world) leaderAndCandidate(ctx context.Context, cli *clientv3.Client) (a, b *testNode, first span, queued Candidate) {
	w.t.Helper()
	a = w.start(cli, "a")
	first = w.waitLeader(ctx, 0)
	b = w.start(cli, "b")
	queued = waitCandidate(ctx, w.t, cli, w.prefix, "b", func(Candidate) bool { return true })
	return a, b, first, queued
}

// keysOf returns the candidate keys under prefix, oldest first.
func keysOf(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string) []Candidate {
	t.Helper()
	cs, err := ReadCandidates(ctx, cli, prefix)
	if err != nil {
		t.Fatalf("ReadCandidates(%s): %v", prefix, err)
	}
	return cs
}

// waitCandidate polls until node has a candidate key for which ok holds.
func waitCandidate(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix, node string, ok func(Candidate) bool) Candidate {
	t.Helper()
	for {
		for _, c := range keysOf(ctx, t, cli, prefix) {
			if c.Node == node && ok(c) {
				return c
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for a candidate key of %s under %s: %v", node, prefix, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// clientLease converts a Term's lease to the client's type.
func clientLease(id int64) clientv3.LeaseID { return clientv3.LeaseID(id) }
