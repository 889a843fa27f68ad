package status

import (
	"context"
	"sync"
	"time"
)

// shared shares one read among the requests that want it at once. A request is answered by a
// read begun after it came, so that no answer is older than the request, and while a read is in
// flight the requests that come wait for the next one, which starts when it ends: however many
// requests arrive, at most one read of each document is in flight, so the store's pool and
// etcd stay the runner's, and a party that floods the port gets the answers one reader would.
//
// The read runs on a context of its own, bounded by timeout and ended with the server, so that
// the request that started it cannot cancel it for the others by going away.
type shared[T any] struct {
	base    context.Context
	timeout time.Duration
	read    func(ctx context.Context) T

	mu    sync.Mutex
	val   T
	begun int           // reads begun
	of    int           // the read val is of, counted as begun; 0 for none
	wait  chan struct{} // closed when the read in flight ends; nil while none is
}

func newShared[T any](base context.Context, timeout time.Duration, read func(context.Context) T) *shared[T] {
	return &shared[T]{base: base, timeout: timeout, read: read}
}

// get returns the value of a read begun after it was called, starting one unless one is in
// flight. It fails only when ctx ends first.
func (s *shared[T]) get(ctx context.Context) (T, error) {
	s.mu.Lock()
	after := s.begun // a read counted above it began after this request came
	for s.of <= after {
		if s.wait == nil {
			s.begun++
			s.wait = make(chan struct{})
			go s.refresh(s.wait, s.begun)
		}
		w := s.wait
		s.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
		s.mu.Lock()
	}
	v := s.val
	s.mu.Unlock()
	return v, nil
}

// refresh reads the value as read n and keeps it, then wakes the requests waiting in done.
func (s *shared[T]) refresh(done chan struct{}, n int) {
	ctx, cancel := context.WithTimeout(s.base, s.timeout)
	defer cancel()
	v := s.read(ctx)
	s.mu.Lock()
	s.val, s.of, s.wait = v, n, nil
	s.mu.Unlock()
	close(done)
}
