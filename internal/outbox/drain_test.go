package outbox

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// TestDispatcher_Drain: Drain waits for the delivery in flight, to a real HTTP receiver that
// holds it, to end and be recorded, while the term goes on; from then on no delivery starts,
// though messages are due. On a dispatcher with nothing in flight it returns at once.
func TestDispatcher_Drain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, release := make(chan struct{}, 1), make(chan struct{})
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select {
		case got <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	dl, err := NewWebhook(WebhookConfig{Hosts: []string{"127.0.0.1"}, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	m := hook("k.held", srv.URL+"/")
	m.Updated, m.Attempts = now, 1
	st := &fakeStore{queue: []scheduler.Message{m}}
	d, err := New(Config{Store: st, Poll: time.Millisecond, Deliverers: map[scheduler.MessageKind]Deliverer{scheduler.MessageWebhook: dl}})
	if err != nil {
		t.Fatal(err)
	}
	term, endTerm := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(term, 7) }()
	<-got
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		d.Drain(ctx)
	}()
	testenv.Eventually(t, 30*time.Second, time.Millisecond, "the drain begun", d.gate.isClosed)
	st.mu.Lock()
	late := hook("k.late", srv.URL+"/")
	late.Updated, late.Attempts = now, 1
	st.queue = append(st.queue, late)
	st.mu.Unlock()
	close(release)
	<-drained
	if rec, ok := st.record("k.held"); !ok || rec.Outcome != scheduler.DeliveryOK {
		t.Fatalf("record of the held delivery = %+v (%v) when the drain ended, want delivered", rec, ok)
	}
	endTerm()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if rec, ok := st.record("k.late"); ok || requests.Load() != 1 {
		t.Fatalf("after the drain: %d requests, the late message recorded %+v (%v); want it never sent", requests.Load(), rec, ok)
	}
	d.Drain(ctx) // nothing in flight: at once
}
