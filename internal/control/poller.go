package control

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Poller is the Watcher of a Postgres: it reads the paused jobs and the
// pending requests every poll interval and delivers each request it has not
// delivered before on Requests, with the guarantees of a Watcher (at least
// once; the run ledger makes the second run of a manual slot a no-op).
//
// It polls rather than listens because pausing and triggering are an
// operator's actions, for which a poll interval of delay is nothing, and a
// small read per interval needs no connection held open per replica. A
// request deleted with Done is forgotten, so the same slot requested again
// later is delivered again.
type Poller struct {
	s    *Postgres
	lg   *zap.Logger
	poll time.Duration
	out  chan Request

	ready     chan struct{}
	readyOnce sync.Once
	started   atomic.Bool

	mu     sync.RWMutex
	paused map[string]struct{}
}

// minPoll bounds how often a Poller reads, so that a mistaken interval
// cannot turn it into a busy loop on the database.
const minPoll = 100 * time.Millisecond

// NewPoller returns a Poller of s that reads every poll (at least
// minPoll) and logs through lg (nil: no logging). Call Run to start it.
func (s *Postgres) NewPoller(poll time.Duration, lg *zap.Logger) *Poller {
	if lg == nil {
		lg = zap.NewNop()
	}
	return &Poller{
		s: s, lg: lg.Named("control"), poll: max(poll, minPoll),
		out: make(chan Request), ready: make(chan struct{}), paused: map[string]struct{}{},
	}
}

// Paused reports whether job was paused at the last read; false before the
// first (see Ready). Safe for concurrent use.
func (w *Poller) Paused(job string) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	_, ok := w.paused[job]
	return ok
}

// Ready is closed once the first read of the paused jobs has succeeded.
func (w *Poller) Ready() <-chan struct{} { return w.ready }

// Requests returns the channel on which Run delivers trigger requests. It
// is closed when Run returns.
func (w *Poller) Requests() <-chan Request { return w.out }

// Run keeps the Poller current until ctx ends, then returns nil. It may be
// called once; a second call returns an error at once.
func (w *Poller) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("control: poller run twice")
	}
	defer close(w.out)
	delivered := map[string]bool{}
	failures := 0
	for {
		pending, err := w.read(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			failures++
			if failures == 1 || failures%60 == 0 {
				w.lg.Warn("read operations state", zap.Int("attempt", failures), zap.Error(err))
			}
		default:
			failures = 0
			live := map[string]bool{}
			for _, r := range pending {
				live[r.Key] = true
				if delivered[r.Key] {
					continue
				}
				// A consumer that does not read never holds up Paused: an
				// untaken request is offered again after the next read.
				select {
				case w.out <- r:
					delivered[r.Key] = true
				case <-time.After(w.poll):
				case <-ctx.Done():
					return nil
				}
			}
			for k := range delivered {
				if !live[k] {
					delete(delivered, k)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(w.poll):
		}
	}
}

// read refreshes the paused set and returns the pending requests.
func (w *Poller) read(ctx context.Context) ([]Request, error) {
	paused, err := w.s.Paused(ctx)
	if err != nil {
		return nil, err
	}
	set := make(map[string]struct{}, len(paused))
	for job := range paused {
		set[job] = struct{}{}
	}
	w.mu.Lock()
	w.paused = set
	w.mu.Unlock()
	w.readyOnce.Do(func() { close(w.ready) })
	return w.s.Requests(ctx)
}
