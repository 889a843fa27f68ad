package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// TestOutbox_ManyFailingPortsCountNoAttemptUnsent: a receiver that holds every request past the
// webhook's timeout on each of 12 ports is 12 failing destinations, which together get half
// the 4 slots. Their probes that cannot start for that half are handed back like the rest of
// their messages: no webhook's attempt is counted without a request. Before, each failing
// port kept its probe waiting in memory: they filled the claims' whole room (10), waited there
// for five timeouts, past the claim's TTL, and were then put back as expired, their attempt
// counted, never sent.
func TestOutbox_ManyFailingPortsCountNoAttemptUnsent(t *testing.T) {
	const ports, perPort, hookTimeout = 12, 4, 500 * time.Millisecond
	forEachOutboxStore(t, func(t *testing.T, r *outboxRig) {
		release := r.holdHooks()
		var urls []string
		for range ports {
			srv := httptest.NewServer(r.http.Config.Handler)
			t.Cleanup(srv.Close)
			urls = append(urls, srv.URL)
		}
		t.Cleanup(release) // before the servers wait for their handlers
		slot := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
		var hooks []string
		if err := r.store.Fenced(r.ctx, "invoices", 10, func(ctx context.Context, tx scheduler.Tx) error {
			for i := range ports * perPort {
				m := scheduler.Message{Key: fmt.Sprintf("ports/hook/%d", i), Job: "invoices", ScheduledAt: slot, Token: 10,
					Kind: scheduler.MessageWebhook, Destination: urls[i%ports] + "/invoices", Body: `{"client":1}`}
				if _, err := r.store.Enqueue(ctx, tx, m); err != nil {
					return err
				}
				hooks = append(hooks, m.Key)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// The claim's TTL is four of the webhook's timeouts: a message that waits in memory only
		// for a free slot starts well within it.
		stop := r.dispatchLanes(r.store, 10, hookTimeout, 4*hookTimeout)
		testenv.Eventually(t, outboxTimeout/3, 10*time.Millisecond, "three requests to every port", func() bool {
			for p := range ports {
				n := 0
				for i := p; i < len(hooks); i += ports {
					n += r.hookCount(hooks[i])
				}
				if n < 3 {
					return false
				}
			}
			return true
		})
		release()
		got := r.settled()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		for _, k := range hooks {
			if m, n := got[k], r.hookCount(k); m.Status != scheduler.MessageDelivered || m.Attempts != n {
				t.Errorf("webhook %s: status %s, %d attempts, %d requests; want delivered, one attempt per request", k, m.Status, m.Attempts, n)
			}
		}
	})
}
