package status

import (
	"context"
	"sync"
	"time"
)

// snapshotAge is how long a document read from the store and the coordinator is served to the
// requests that come after it: a page that refreshes itself, a probe and a scrape see the
// cluster at most this late, and a flood of requests reads no more than one reader a second.
const snapshotAge = time.Second

// snapshot shares one read among the requests that want it at once, and serves its result to
// those that come within snapshotAge of it. However many requests arrive, at most one read of
// each document is in flight, so the store's pool and etcd stay the runner's: a party that
// floods the port gets the same answer, not a share of the leader's connections.
//
// The read runs on a context of its own, bounded by timeout and ended with the server, so that
// the request that started it cannot cancel it for the others by going away.
type snapshot[T any] struct {
	base    context.Context
	now     func() time.Time
	timeout time.Duration
	read    func(ctx context.Context) T

	mu   sync.Mutex
	val  T
	at   time.Time     // when val was read
	have bool          // val is current: read, and not invalidated since
	gen  int           // counts invalidations, so that a read begun before one is not kept as current
	wait chan struct{} // closed when the read in flight ends; nil while none is
}

func newSnapshot[T any](base context.Context, now func() time.Time, timeout time.Duration, read func(context.Context) T) *snapshot[T] {
	return &snapshot[T]{base: base, now: now, timeout: timeout, read: read}
}

// get returns the current value, read now unless one read within snapshotAge is kept, waiting
// for the read in flight rather than starting another. It fails only when ctx ends first.
func (s *snapshot[T]) get(ctx context.Context) (T, error) {
	waited := false
	for {
		s.mu.Lock()
		if s.have && (waited || s.now().Sub(s.at) < snapshotAge) {
			v := s.val
			s.mu.Unlock()
			return v, nil
		}
		if s.wait == nil {
			s.wait = make(chan struct{})
			go s.refresh(s.wait, s.gen)
		}
		w := s.wait
		s.mu.Unlock()
		select {
		case <-w:
			waited = true
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
}

// refresh reads the value and keeps it, current unless invalidated since gen, then wakes the
// requests waiting in done.
func (s *snapshot[T]) refresh(done chan struct{}, gen int) {
	ctx, cancel := context.WithTimeout(s.base, s.timeout)
	defer cancel()
	v := s.read(ctx)
	s.mu.Lock()
	s.val, s.at, s.have, s.wait = v, s.now(), s.gen == gen, nil
	s.mu.Unlock()
	close(done)
}

// invalidate makes the next get read anew: after an action, the page that took it shows its
// effect.
func (s *snapshot[T]) invalidate() {
	s.mu.Lock()
	s.have = false
	s.gen++
	s.mu.Unlock()
}
