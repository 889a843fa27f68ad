package outbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv/rawhttp"
)

// TestWebhook_SentOncePerAttempt: a receiver that reads a webhook and then resets the connection
// gets it once per attempt, even while earlier deliveries left connections to it open (net/http's
// own transport sent a request with an Idempotency-Key again on each of them); and a reply whose
// headers run to hundreds of KiB is not read.
func TestWebhook_SentOncePerAttempt(t *testing.T) {
	r := rawhttp.StartReceiver(t)
	w, err := NewWebhook(WebhookConfig{Hosts: []string{"127.0.0.1"}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg := func(path, key string) scheduler.Message {
		return scheduler.Message{Key: key, Kind: scheduler.MessageWebhook, Destination: r.URL + path, Body: `{}`}
	}
	for round := range 5 {
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				if err := w.Deliver(ctx, msg("/ok", fmt.Sprintf("ok.%d.%d", round, i)), 7); err != nil {
					t.Errorf("warm-up delivery: %v", err)
				}
			})
		}
		wg.Wait()
		key := fmt.Sprintf("reset.%d", round)
		if err := w.Deliver(ctx, msg("/reset", key), 7); err == nil {
			t.Fatal("a delivery whose connection was reset succeeded")
		}
		if n := r.Count("/reset", key); n != 1 {
			t.Fatalf("round %d: the receiver got the attempt's webhook %d times, want once", round, n)
		}
	}
	if err := w.Deliver(ctx, msg("/headers", "headers"), 7); err == nil {
		t.Fatal("a reply with about 200 KiB of headers was read")
	}
}
