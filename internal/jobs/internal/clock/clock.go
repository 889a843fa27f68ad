package clock

import "time"

// Clock is a source of time, injected so that schedules, retries, timeouts and catch-up can be
// tested exactly and without sleeping.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
	// TimerAt returns a timer that fires at at: never before it, and as soon after it as the
	// clock allows. The runner waits for its slots with it.
	TimerAt(at time.Time) Timer
	// AfterFunc calls f in its own goroutine after d, unless the timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTimer returns a time.Timer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// TimerAt returns a timer that fires at at, without the lateness of a time.Timer (precise.go).
func (Real) TimerAt(at time.Time) Timer { return newPreciseTimer(at, precision) }

// AfterFunc returns time.AfterFunc(d, f).
func (Real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }
