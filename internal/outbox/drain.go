package outbox

import (
	"context"
	"sync"
)

// Drain is the dispatcher's part of a graceful shutdown, before the term ends: from now on it
// claims no message and starts no delivery, in this term or any other, and Drain waits until
// the deliveries in flight have ended and been recorded, or until ctx ends. A receiver that
// answers within that time is thus not sent the message again by the next leader, as it would
// be if the end of the term cut the delivery short. Run goes on until its ctx ends; messages
// claimed and not started stay sending, for the next term to take over. On a dispatcher that
// delivers nothing Drain returns at once.
func (d *Dispatcher) Drain(ctx context.Context) {
	select {
	case <-d.gate.close():
	case <-ctx.Done():
	}
}

// gate counts the deliveries in flight, so that Drain can wait for them, and refuses new ones
// once a drain began.
type gate struct {
	mu       sync.Mutex
	closed   bool
	inflight int
	idle     chan struct{} // closed once the gate is closed and nothing is in flight
}

func newGate() *gate { return &gate{idle: make(chan struct{})} }

// enter counts a delivery in, or reports false once the gate is closed.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.inflight++
	return true
}

// leave counts a delivery out.
func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	if g.closed && g.inflight == 0 {
		close(g.idle)
	}
}

// isClosed reports whether a drain began.
func (g *gate) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// close refuses new deliveries and returns a channel closed once none is in flight.
func (g *gate) close() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		if g.inflight == 0 {
			close(g.idle)
		}
	}
	return g.idle
}
