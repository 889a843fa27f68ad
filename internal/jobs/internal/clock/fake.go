package clock

import (
	"sync"
	"time"
)

// Fake is a Clock that moves only when its user advances it, for tests that must be exact and
// never sleep. It is safe for concurrent use.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *Fake
	at      time.Time
	ch      chan time.Time
	fn      func() // AfterFunc's
	stopped bool
	fired   bool
}

// NewFake returns a Fake clock that reads now until it is advanced.
func NewFake(now time.Time) *Fake { return &Fake{now: now} }

// Now returns the clock's time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the clock is advanced by d; at once if d <= 0.
func (c *Fake) NewTimer(d time.Duration) Timer { return c.newTimer(d, nil) }

// TimerAt returns a timer that fires when the clock is advanced to at; at once if it is there.
func (c *Fake) TimerAt(at time.Time) Timer { return c.newTimer(at.Sub(c.Now()), nil) }

// AfterFunc calls f in its own goroutine when the clock is advanced by d; at once if d <= 0.
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer { return c.newTimer(d, f) }

func (c *Fake) newTimer(d time.Duration, fn func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), ch: make(chan time.Time, 1), fn: fn}
	if d <= 0 {
		t.fire(c.now)
		return t
	}
	if len(c.timers) >= 64 && len(c.timers)&(len(c.timers)-1) == 0 {
		// Drop stopped timers now and then: a busy loop stops one per event.
		kept := c.timers[:0]
		for _, x := range c.timers {
			if !x.stopped {
				kept = append(kept, x)
			}
		}
		clear(c.timers[len(kept):])
		c.timers = kept
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock forward and fires the timers that are due.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.fire(c.now)
		default:
			kept = append(kept, t)
		}
	}
	c.timers = kept
}

// Pending reports how many armed timers there are: how many goroutines wait on the clock.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// fire sends on the timer's channel, or calls its function in a goroutine of its own.
func (t *fakeTimer) fire(now time.Time) {
	t.fired = true
	if t.fn != nil {
		go t.fn()
		return
	}
	t.ch <- now
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped && !t.fired
	t.stopped = true
	return was
}
