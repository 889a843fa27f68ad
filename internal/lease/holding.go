package lease

import (
	"context"
	"fmt"
	"sync"
	"time"

	"scheduler"
)

// Holding is the term a campaigner holds right now, if any, with what its
// backend keeps of it (a holder ID, a lock value, a session). The zero
// value holds no term. It is safe for concurrent use.
type Holding[T any] struct {
	mu   sync.Mutex
	term *scheduler.Term
	of   T
}

// Set records the current term and what is kept of it; nil for none.
func (h *Holding[T]) Set(t *scheduler.Term, of T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.term, h.of = t, of
}

// Leading returns the term held right now, if any: a snapshot for status
// pages; what a leader does hangs off lead's context.
func (h *Holding[T]) Leading() (scheduler.Term, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.term == nil {
		return scheduler.Term{}, false
	}
	return *h.term, true
}

// Check returns what is kept of the term with token, the first step of a
// Confirm, or an error wrapping notConfirmed when no term with that token
// is held.
func (h *Holding[T]) Check(token int64, notConfirmed error) (T, error) {
	h.mu.Lock()
	t, of := h.term, h.of
	h.mu.Unlock()
	var zero T
	switch {
	case t == nil:
		return zero, fmt.Errorf("confirm term %d: no term held: %w", token, notConfirmed)
	case t.Token != token:
		return zero, fmt.Errorf("confirm term %d: the term held has token %d: %w", token, t.Token, notConfirmed)
	}
	return of, nil
}

// Lead runs one term won: it records term, with of, as held, calls
// ev.OnElected, runs lead under Hold with r, records no term, and calls
// ev.OnLost. It returns how long the term was held (by r.Now), why it
// ended and what lead returned.
func (h *Holding[T]) Lead(ctx context.Context, term scheduler.Term, of T, ev Events,
	granted time.Time, r Renewal, lead LeadFunc) (time.Duration, Reason, error) {
	h.Set(&term, of)
	if ev.OnElected != nil {
		ev.OnElected(term)
	}
	reason, leadErr := Hold(ctx, term, granted, r, lead)
	held := r.Now().Sub(term.Since)
	var none T
	h.Set(nil, none)
	if ev.OnLost != nil {
		ev.OnLost(term, reason)
	}
	return held, reason, leadErr
}
