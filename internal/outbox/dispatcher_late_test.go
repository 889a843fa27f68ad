package outbox

import (
	"sync"
	"testing"
	"time"

	"scheduler"
)

// TestDispatcher_LateRecordObserved: an outcome recorded late in the term, after the store
// refused it for longer than the record timeout, is observed (counted in the metrics) once.
func TestDispatcher_LateRecordObserved(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	st := &fakeStore{queue: queued(1, now), failing: 30}
	var (
		mu  sync.Mutex
		obs []scheduler.DeliveryOutcome
	)
	d, err := New(Config{Store: st, Now: func() time.Time { return now }, RecordTimeout: time.Millisecond, Poll: time.Millisecond,
		Deliverers: map[scheduler.MessageKind]Deliverer{scheduler.MessageEmail: NewLog(nil)},
		Observe: func(_ scheduler.Message, d scheduler.Delivery) {
			mu.Lock()
			defer mu.Unlock()
			obs = append(obs, d.Outcome)
		}})
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, d, "the delivery recorded", func() bool {
		r, ok := st.record("k0")
		return ok && r.Outcome == scheduler.DeliveryOK
	})
	mu.Lock()
	defer mu.Unlock()
	if len(obs) != 1 || obs[0] != scheduler.DeliveryOK {
		t.Fatalf("observed %v, want one delivered", obs)
	}
}
