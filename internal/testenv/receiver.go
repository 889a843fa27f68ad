package testenv

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Receiver is a real HTTP server that stands in for a webhook receiver: it answers every
// request with one status and counts the requests by their Idempotency-Key, which is how a
// test tells a delivery sent twice from two deliveries.
type Receiver struct {
	// URL is the server's base URL.
	URL string

	mu   sync.Mutex
	keys map[string]int
}

// MustReceiver starts a Receiver until the test ends. It answers status, with text as the body
// of an error status.
func MustReceiver(tb testing.TB, status int, text string) *Receiver {
	tb.Helper()
	r := &Receiver{keys: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.keys[req.Header.Get("Idempotency-Key")]++
		r.mu.Unlock()
		if status >= http.StatusBadRequest {
			http.Error(w, text, status)
			return
		}
		w.WriteHeader(status)
	}))
	tb.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Keys returns how many requests came with each Idempotency-Key so far.
func (r *Receiver) Keys() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.keys)
}
