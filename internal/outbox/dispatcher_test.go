package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// fakeStore is a hand-written Store: claims hand out queue in batches, records are kept.
type fakeStore struct {
	mu      sync.Mutex
	queue   []scheduler.Message
	claimed int
	records map[string]scheduler.Delivery
	claimFn func() error // if set, its error fails claims
	failing int          // the first failing records fail
}

// ReleaseOutbox hands nothing back: the store's claims never lose their answers.
func (*fakeStore) ReleaseOutbox(context.Context, int64, time.Time) (int64, error) { return 0, nil }

func (f *fakeStore) ClaimOutbox(_ context.Context, _ int64, limit int, _ time.Time) ([]scheduler.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimFn != nil {
		if err := f.claimFn(); err != nil {
			return nil, err
		}
	}
	n := min(limit, len(f.queue))
	out := f.queue[:n]
	f.queue = f.queue[n:]
	f.claimed += n
	return out, nil
}

func (f *fakeStore) RecordDelivery(ctx context.Context, _ int64, key string, d scheduler.Delivery) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing > 0 {
		f.failing--
		return errors.New("connection reset")
	}
	if f.records == nil {
		f.records = map[string]scheduler.Delivery{}
	}
	f.records[key] = d
	return nil
}

func (f *fakeStore) record(key string) (scheduler.Delivery, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.records[key]
	return d, ok
}

// deliverFunc is a Deliverer of a function.
type deliverFunc func(ctx context.Context, m scheduler.Message) error

func (f deliverFunc) Deliver(ctx context.Context, m scheduler.Message, _ int64) error {
	return f(ctx, m)
}

// queued returns n e-mail messages claimed at now.
func queued(n int, now time.Time) []scheduler.Message {
	var ms []scheduler.Message
	for i := range n {
		m := email(fmt.Sprintf("k%d", i), "a@example.test")
		m.Updated, m.Attempts = now, 1
		ms = append(ms, m)
	}
	return ms
}

// runUntil runs d for a term until cond holds (what names it in a failure), then ends the term
// and fails the test unless Run returned nil.
func runUntil(t *testing.T, d *Dispatcher, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, 7) }()
	testenv.Eventually(t, 30*time.Second, time.Millisecond, what, cond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestDispatcher_Run: deliveries run with bounded concurrency, Run returns when ctx ends
// after its deliveries ended and were recorded, and a term that ends mid-send hands the
// message on without a backoff.
func TestDispatcher_Run(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	st := &fakeStore{queue: queued(6, now)}
	var inFlight, peak atomic.Int32
	started := make(chan struct{}, 6)
	d, err := New(Config{Store: st, Concurrency: 2, Batch: 4, Now: func() time.Time { return now },
		After: func(time.Duration) <-chan time.Time { return nil }, // claim once a batch, then wait for ctx
		Deliverers: map[scheduler.MessageKind]Deliverer{scheduler.MessageEmail: deliverFunc(func(ctx context.Context, m scheduler.Message) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			started <- struct{}{}
			<-ctx.Done() // every send hangs until the term ends
			return ctx.Err()
		})}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, 7) }()
	<-started
	<-started
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil when ctx ends", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak concurrency %d, want 2", p)
	}
	if n := inFlight.Load(); n != 0 {
		t.Fatalf("%d deliveries still running after Run returned", n)
	}
	recorded := 0
	for _, m := range queued(6, now) {
		if r, ok := st.record(m.Key); ok {
			recorded++
			if r.Outcome != scheduler.DeliveryRetry || !r.Next.Equal(now) {
				t.Errorf("record of %s cut short by the term's end = %+v, want retry due at once", m.Key, r)
			}
		}
	}
	if recorded != 2 {
		t.Fatalf("%d records, want 2: the sends started, none of those left claimed", recorded)
	}
}

// TestDispatcher_Fenced: a claim refused by the fence ends Run with ErrFenced.
func TestDispatcher_Fenced(t *testing.T) {
	stale := errors.New("stale token")
	st := &fakeStore{claimFn: func() error { return stale }}
	d, err := New(Config{Store: st, Fenced: func(err error) bool { return errors.Is(err, stale) },
		Deliverers: map[scheduler.MessageKind]Deliverer{scheduler.MessageEmail: NewLog(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Run(ctx, 7); !errors.Is(err, ErrFenced) || !errors.Is(err, stale) {
		t.Fatalf("Run = %v, want ErrFenced wrapping the store's error", err)
	}
}

// TestDispatcher_ExpiredClaim: a message whose claim is older than ClaimTTL is put back to
// pending instead of being sent; a message of a kind without a deliverer is retried.
func TestDispatcher_ExpiredClaim(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	ms := queued(2, now)
	ms[0].Updated = now.Add(-time.Hour)
	ms[1].Kind = scheduler.MessageWebhook
	st := &fakeStore{queue: ms}
	var sent atomic.Int32
	d, err := New(Config{Store: st, ClaimTTL: time.Minute, Now: func() time.Time { return now },
		Deliverers: map[scheduler.MessageKind]Deliverer{scheduler.MessageEmail: deliverFunc(func(context.Context, scheduler.Message) error {
			sent.Add(1)
			return nil
		})}})
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, d, "both messages recorded", func() bool {
		_, ok0 := st.record("k0")
		_, ok1 := st.record("k1")
		return ok0 && ok1
	})
	if n := sent.Load(); n != 0 {
		t.Fatalf("%d messages sent, want 0", n)
	}
	if r, _ := st.record("k0"); r.Outcome != scheduler.DeliveryRetry || !r.Next.Equal(now) {
		t.Fatalf("expired claim recorded %+v, want retry due at once", r)
	}
	if r, _ := st.record("k1"); r.Outcome != scheduler.DeliveryRetry || r.Next.Before(now.Add(DefaultRetryBackoff/2)) {
		t.Fatalf("message without a deliverer recorded %+v, want retry with a backoff", r)
	}
}

func TestNew_Config(t *testing.T) {
	dl := map[scheduler.MessageKind]Deliverer{scheduler.MessageEmail: NewLog(nil)}
	for _, cfg := range []Config{
		{Deliverers: dl},
		{Store: &fakeStore{}},
		{Store: &fakeStore{}, Deliverers: map[scheduler.MessageKind]Deliverer{scheduler.MessageEmail: nil}},
		{Store: &fakeStore{}, Deliverers: dl, Batch: -1},
		{Store: &fakeStore{}, Deliverers: dl, RetryBackoff: time.Hour, MaxBackoff: time.Minute},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

// TestDispatcher_RecordRetried: a record that fails is retried, at once and then, past the
// record timeout, in the later rounds of the term, so that a delivered message is not left
// sending for the next term to send again.
func TestDispatcher_RecordRetried(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	st := &fakeStore{queue: queued(1, now), failing: 30}
	d, err := New(Config{Store: st, Now: func() time.Time { return now }, RecordTimeout: time.Millisecond, Poll: time.Millisecond,
		Deliverers: map[scheduler.MessageKind]Deliverer{scheduler.MessageEmail: NewLog(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, d, "the delivery recorded", func() bool {
		r, ok := st.record("k0")
		return ok && r.Outcome == scheduler.DeliveryOK
	})
}
