package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDaemon_ShutdownLetsDeliveriesEnd: a leader stopped (SIGTERM) while a webhook receiver
// holds a delivery, and answers it once the shutdown has begun, records that delivery as made
// before its term ends; the next leader does not send the message again. Before, the end of
// the term cut the request short after the receiver had taken it, the attempt was recorded for
// a retry, and the next leader posted the message a second time.
func TestDaemon_ShutdownLetsDeliveriesEnd(t *testing.T) {
	forEachDaemonStore(t, "", func(t *testing.T, c *cluster) {
		var (
			mu       sync.Mutex
			count    = map[string]int{}
			first    = make(chan string, 1)
			stopping = make(chan struct{})
		)
		hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			_, _ = io.Copy(io.Discard, req.Body) // read whole, so that a client that leaves is seen
			key := req.Header.Get("Idempotency-Key")
			mu.Lock()
			count[key]++
			mu.Unlock()
			select {
			case first <- key:
			default:
			}
			select {
			case <-stopping:
			case <-req.Context().Done():
				return
			}
			// The shutdown has begun: the answer comes after the leader's drain of its runs.
			select {
			case <-time.After(300 * time.Millisecond):
			case <-req.Context().Done():
			}
		}))
		t.Cleanup(hooks.Close)
		c.writeConfig(fmt.Sprintf(`
outbox: {webhook: {hosts: [127.0.0.1]}, retry_backoff: 100ms}
jobs:
  - name: flaky
    schedule: "* * * * * *"
    type: exec
    command: [/bin/sh, -c, "exit 3"]
    misfire: skip
    notify: {on: [failed], webhook: %q}
`, hooks.URL+"/notify"))
		c.cli("migrate") // a new data_dir on SQLite
		a := c.start("a")
		key := <-first
		close(stopping)
		if err := a.stop(t); err != nil {
			t.Fatal(err)
		}
		c.start("b")
		c.wait("the held notification delivered", func() bool {
			var msgs []messageJSON
			if err := json.Unmarshal([]byte(c.cli("outbox", "--json")), &msgs); err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if m.Key == key {
					return m.Status == "delivered"
				}
			}
			return false
		})
		mu.Lock()
		n := count[key]
		mu.Unlock()
		if n != 1 {
			t.Fatalf("notification %s posted %d times, want once", key, n)
		}
		if !strings.HasPrefix(key, "notify.flaky.") {
			t.Fatalf("first request's key %q, want a notification of flaky", key)
		}
	})
}
