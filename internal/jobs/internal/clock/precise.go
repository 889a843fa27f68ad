package clock

import (
	"runtime"
	"sync/atomic"
	"time"
)

// precision is how long before its instant a precise timer wakes to wait out the rest itself. A
// time.Timer fires late by up to about a millisecond when the process is idle: the runtime's
// poller sleeps in whole milliseconds. A herd started that late starts late as a whole, so the
// runner's slots are waited for by a timer that wakes this much early and watches the clock for
// the rest, giving up at most this much processor time per wake-up.
const precision = 2 * time.Millisecond

// Precise timer states.
const (
	armed int32 = iota
	fired
	stopped
)

// preciseTimer fires at its instant, never before, and without a time.Timer's lateness: a
// time.AfterFunc wakes it its lead early and its goroutine watches the clock until the instant,
// yielding the processor to any other goroutine that wants it meanwhile.
type preciseTimer struct {
	at    time.Time
	lead  time.Duration
	c     chan time.Time
	state atomic.Int32
	t     *time.Timer
}

// newPreciseTimer arms a timer for at that wakes lead before it; the runner's lead is precision.
func newPreciseTimer(at time.Time, lead time.Duration) *preciseTimer {
	p := &preciseTimer{at: at, lead: lead, c: make(chan time.Time, 1)}
	// Armed once p.t is set, which wait may use.
	p.t = time.AfterFunc(time.Hour, p.wait)
	p.t.Reset(time.Until(at) - lead)
	return p
}

// wait watches the clock until the timer's instant, then fires, unless it was stopped meanwhile.
// Woken more than its lead early (the wall clock was set back since it was armed), it sleeps
// again rather than watch the clock for that long.
func (p *preciseTimer) wait() {
	if p.state.Load() != armed {
		return
	}
	now := time.Now()
	if rest := p.at.Sub(now); rest > p.lead {
		p.t.Reset(rest - p.lead)
		return
	}
	for now.Before(p.at) {
		if p.state.Load() != armed {
			return
		}
		runtime.Gosched()
		now = time.Now()
	}
	if p.state.CompareAndSwap(armed, fired) {
		p.c <- now
	}
}

// C is the channel the timer's instant is sent on, once.
func (p *preciseTimer) C() <-chan time.Time { return p.c }

// Stop prevents the timer from firing; false if it had already fired or been stopped.
func (p *preciseTimer) Stop() bool {
	p.t.Stop()
	return p.state.CompareAndSwap(armed, stopped)
}
