package status

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// Bounds of the run output streams open at once: each holds a connection and a goroutine for
// as long as its run prints, so that one client cannot hold the server's for its own.
const (
	maxStreams          = 128
	maxStreamsPerClient = 16
)

// streamRetryAfter is the Retry-After, in seconds, of a stream refused over its bounds.
const streamRetryAfter = "5"

// streamCount counts the streams open, by client address and in all.
type streamCount struct {
	mu       sync.Mutex
	total    int
	byClient map[string]int
}

// take counts a stream of client unless that passes a bound, and says whether it did.
func (c *streamCount) take(client string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total >= maxStreams || c.byClient[client] >= maxStreamsPerClient {
		return false
	}
	if c.byClient == nil {
		c.byClient = map[string]int{}
	}
	c.total++
	c.byClient[client]++
	return true
}

// release uncounts a stream of client.
func (c *streamCount) release(client string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if c.byClient[client]--; c.byClient[client] == 0 {
		delete(c.byClient, client)
	}
}

// streaming serves h with requests that also end when the server shuts down: a stream would
// otherwise hold the shutdown for its whole bound. A stream past the bounds of the open ones
// is refused with 503 and a Retry-After. A Server made without New streams until the request
// ends.
func (s *Server) streaming(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := remoteHost(r)
		if !s.open.take(client) {
			w.Header().Set("Retry-After", streamRetryAfter)
			http.Error(w, "too many run output streams open: close one, or retry later", http.StatusServiceUnavailable)
			return
		}
		defer s.open.release(client)
		// The request is in; what remains is writing, for as long as the run prints.
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		if s.streams == nil {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(s.streams, cancel)
		defer stop()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
