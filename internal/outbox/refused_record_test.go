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

// errRefused is the fence's refusal in statusStore, errNotClaimed its answer to a record of a
// message that is not sending.
var (
	errRefused    = errors.New("fenced out")
	errNotClaimed = errors.New("not claimed")
)

// statusStore keeps each message's status and claim as the real store does: a claim marks due
// messages sending under its token, a record ends it (while the fence lets it), a release or a
// hand-back puts sending messages of the token back to pending, their attempt not counted.
type statusStore struct {
	mu       sync.Mutex
	msgs     []scheduler.Message
	status   map[string]string
	attempts map[string]int
	records  map[string]scheduler.Delivery
	deferred []string
	fenced   bool
}

func newStatusStore(ms []scheduler.Message) *statusStore {
	s := &statusStore{msgs: ms, status: map[string]string{}, attempts: map[string]int{}, records: map[string]scheduler.Delivery{}}
	for _, m := range ms {
		s.status[m.Key] = "pending"
	}
	return s
}

func (s *statusStore) setFenced(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fenced = on
}

func (s *statusStore) ClaimOutbox(_ context.Context, _ int64, limit int, now time.Time) ([]scheduler.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fenced {
		return nil, errRefused
	}
	var out []scheduler.Message
	for _, m := range s.msgs {
		if len(out) == limit {
			break
		}
		if s.status[m.Key] == "pending" {
			s.status[m.Key] = "sending"
			s.attempts[m.Key]++
			m.Updated, m.Attempts = now, s.attempts[m.Key]
			out = append(out, m)
		}
	}
	return out, nil
}

func (s *statusStore) RecordDelivery(_ context.Context, _ int64, key string, d scheduler.Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.fenced:
		return errRefused
	case s.status[key] != "sending":
		return fmt.Errorf("message %q is %s: %w", key, s.status[key], errNotClaimed)
	}
	s.records[key] = d
	s.status[key] = map[scheduler.DeliveryOutcome]string{scheduler.DeliveryOK: "delivered", scheduler.DeliveryRetry: "pending", scheduler.DeliveryDead: "dead"}[d.Outcome]
	return nil
}

func (s *statusStore) ReleaseOutbox(_ context.Context, _ int64, _ time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fenced {
		return 0, errRefused
	}
	n := int64(0)
	for k, st := range s.status {
		if st == "sending" {
			s.status[k] = "pending"
			s.attempts[k]--
			n++
		}
	}
	return n, nil
}

func (s *statusStore) DeferOutbox(_ context.Context, _ int64, keys []string, _, _ time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fenced {
		return 0, errRefused
	}
	n := int64(0)
	for _, k := range keys {
		if s.status[k] == "sending" {
			s.status[k] = "pending"
			s.attempts[k]--
			s.deferred = append(s.deferred, k)
			n++
		}
	}
	return n, nil
}

// count returns how many messages have status st.
func (s *statusStore) count(st string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.status {
		if v == st {
			n++
		}
	}
	return n
}

// sendCounter is a Deliverer that counts the sends of each key, and calls hook after each.
type sendCounter struct {
	mu    sync.Mutex
	sends map[string]int
	total atomic.Int64
	hook  func(n int64)
}

func (c *sendCounter) Deliver(_ context.Context, m scheduler.Message, _ int64) error {
	c.mu.Lock()
	c.sends[m.Key]++
	c.mu.Unlock()
	if n := c.total.Add(1); c.hook != nil {
		c.hook(n)
	}
	return nil
}

// TestDispatcher_RecordRefusedStopsRun: once the fence refuses a delivery's record, Run starts
// no other delivery and returns ErrFenced once those in flight ended, as after a refused claim.
func TestDispatcher_RecordRefusedStopsRun(t *testing.T) {
	st := newStatusStore(queued(40, time.Now()))
	sends := &sendCounter{sends: map[string]int{}}
	sends.hook = func(n int64) {
		if n == 3 {
			st.setFenced(true)
		}
	}
	d, err := New(Config{Store: st, Concurrency: 1, Fenced: func(err error) bool { return errors.Is(err, errRefused) },
		RecordTimeout: 100 * time.Millisecond, Deliverers: map[scheduler.MessageKind]Deliverer{scheduler.MessageEmail: sends}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Run(ctx, 7); !errors.Is(err, ErrFenced) || !errors.Is(err, errRefused) {
		t.Fatalf("Run = %v, want ErrFenced wrapping the refusal", err)
	}
	if n := sends.total.Load(); n != 3 {
		t.Fatalf("%d messages sent, want 3: none after the first refused record", n)
	}
}

// TestDispatcher_RunConfirmedRecordsAfterReset: the fence refuses the outbox's records mid-term
// while the election confirms the term; once it is reset, the outcomes it refused are recorded
// and the messages the term claimed but never started are handed back and sent, each once, in
// the same term.
func TestDispatcher_RunConfirmedRecordsAfterReset(t *testing.T) {
	const n = 30
	st := newStatusStore(queued(n, time.Now()))
	sends := &sendCounter{sends: map[string]int{}}
	sends.hook = func(n int64) {
		if n == 5 {
			st.setFenced(true)
		}
	}
	confirmedUntilDelivered(t, st, sends, n, nil, func() { st.setFenced(false) })
	sends.mu.Lock()
	defer sends.mu.Unlock()
	for k, c := range sends.sends {
		if c != 1 {
			t.Errorf("message %s sent %d times, want once", k, c)
		}
	}
	if len(sends.sends) != n {
		t.Fatalf("%d messages sent, want %d", len(sends.sends), n)
	}
}

// TestDispatcher_RecordNotClaimedGivenUp: outcomes the fence refused, whose messages another
// term then took over (sending no more), are given up once the fence is reset, instead of held
// for good: the dispatcher goes on, and every message is delivered.
func TestDispatcher_RecordNotClaimedGivenUp(t *testing.T) {
	const n = 20
	st := newStatusStore(queued(n, time.Now()))
	sends := &sendCounter{sends: map[string]int{}}
	sends.hook = func(n int64) {
		if n == 4 {
			st.setFenced(true)
		}
	}
	notClaimed := func(c *Config) { c.NotClaimed = func(err error) bool { return errors.Is(err, errNotClaimed) } }
	confirmedUntilDelivered(t, st, sends, n, notClaimed, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		for k, v := range st.status { // another term's claim takes them over
			if v == "sending" {
				st.status[k] = "pending"
			}
		}
		st.fenced = false
	})
}

// confirmedUntilDelivered runs a dispatcher over st's n messages in a term the election
// confirms, with the settings of the tests of refused records (edit, unless nil, changes them):
// once the outbox is blocked it calls unblock, then waits until every message is delivered and
// checks that the dispatcher ends without an error.
func confirmedUntilDelivered(t *testing.T, st *statusStore, sends *sendCounter, n int, edit func(*Config), unblock func()) {
	t.Helper()
	cfg := Config{Store: st, Concurrency: 2, Batch: 10, RecordTimeout: 100 * time.Millisecond, Poll: 10 * time.Millisecond,
		Fenced:     func(err error) bool { return errors.Is(err, errRefused) },
		After:      func(time.Duration) <-chan time.Time { return time.After(50 * time.Millisecond) },
		Deliverers: map[scheduler.MessageKind]Deliverer{scheduler.MessageEmail: sends}}
	if edit != nil {
		edit(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.RunConfirmed(ctx, 7, func(context.Context, int64) error { return nil }) }()
	testenv.Eventually(t, 30*time.Second, time.Millisecond, "the outbox blocked", func() bool { return d.Blocked() != "" })
	unblock()
	testenv.Eventually(t, 30*time.Second, time.Millisecond, "every message delivered", func() bool { return st.count("delivered") == n })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("RunConfirmed = %v, want nil", err)
	}
}

// TestDispatcher_ExpiredClaimHandedBack: a message whose claim expired is handed back to
// pending unsent, its attempt not counted, instead of being recorded a failed attempt: a slow
// destination's queue costs no message its attempts.
func TestDispatcher_ExpiredClaimHandedBack(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	st := newStatusStore(queued(1, now))
	sends := &sendCounter{sends: map[string]int{}}
	clock := atomic.Int64{}
	clock.Store(now.UnixNano())
	d, err := New(Config{Store: st, ClaimTTL: time.Minute, Now: func() time.Time { return time.Unix(0, clock.Load()).UTC() },
		Deliverers: map[scheduler.MessageKind]Deliverer{scheduler.MessageEmail: sends}})
	if err != nil {
		t.Fatal(err)
	}
	// The claim is made at now; the delivery is looked at an hour later.
	claimed, err := st.ClaimOutbox(context.Background(), 7, 1, now)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	clock.Store(now.Add(time.Hour).UnixNano())
	d.deliver(context.Background(), d.lg, 7, claimed[0], &unrecorded{res: map[string]outcome{}})
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case sends.total.Load() != 0:
		t.Fatal("a message whose claim expired was sent")
	case len(st.records) != 0:
		t.Fatalf("recorded %v, want no attempt recorded", st.records)
	case st.status["k0"] != "pending" || st.attempts["k0"] != 0 || len(st.deferred) != 1:
		t.Fatalf("status %s, attempts %d, deferred %v; want pending, 0, handed back", st.status["k0"], st.attempts["k0"], st.deferred)
	}
}
