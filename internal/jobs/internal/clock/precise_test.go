package clock

import (
	"testing"
	"time"
)

// TestReal_TimerAtNeverEarly: a precise timer fires at its instant or after it, never before,
// whether the instant is beyond the wake-up's lead, within it, or past.
func TestReal_TimerAtNeverEarly(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   time.Duration
	}{
		{"BeyondTheLead", 3 * precision},
		{"WithinTheLead", precision / 4},
		{"Past", -time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := time.Now().Add(tc.in)
			tm := Real{}.TimerAt(at)
			got := <-tm.C()
			if got.Before(at) {
				t.Fatalf("fired at %s, %s before its instant %s", got, at.Sub(got), at)
			}
			if now := time.Now(); now.Before(at) {
				t.Fatalf("received at %s, before the instant %s", now, at)
			}
			if tm.Stop() {
				t.Fatal("Stop of a fired timer reported it armed")
			}
		})
	}
}

// TestReal_TimerAtStop: a precise timer stopped before its instant never fires, whether it was
// still asleep or already watching the clock, and its watcher returns; a second Stop reports it
// was not armed. The instant is an hour away and the watching timer's lead longer than that, so
// neither timer can reach its instant however slow the machine.
func TestReal_TimerAtStop(t *testing.T) {
	for _, tc := range []struct {
		name string
		lead time.Duration
	}{
		{"Asleep", precision},
		{"Watching", 2 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPreciseTimer(time.Now().Add(time.Hour), tc.lead)
			returned := make(chan struct{})
			go func() {
				p.wait() // a second watcher: this one is known to return or not
				close(returned)
			}()
			if tc.lead > time.Hour {
				// Let the watchers reach the clock-watching loop; were they slower, Stop would
				// find them asleep, which the other case covers.
				time.Sleep(10 * time.Millisecond)
			}
			if !p.Stop() {
				t.Fatal("Stop of an armed timer reported it not armed")
			}
			if p.Stop() {
				t.Fatal("second Stop reported the timer armed")
			}
			select {
			case <-returned:
			case <-time.After(time.Minute):
				t.Fatal("a stopped timer's watcher kept watching the clock")
			}
			select {
			case got := <-p.C():
				t.Fatalf("a stopped timer fired at %s", got)
			default:
			}
		})
	}
}

// TestFake_TimerAt: the fake clock's timer for an instant fires when the clock is advanced to it.
func TestFake_TimerAt(t *testing.T) {
	c := NewFake(t0)
	tm := c.TimerAt(t0.Add(time.Second))
	c.Advance(time.Second - time.Nanosecond)
	select {
	case at := <-tm.C():
		t.Fatalf("fired at %s, before its instant", at)
	default:
	}
	c.Advance(time.Nanosecond)
	if at := <-tm.C(); !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("fired at %s, want %s", at, t0.Add(time.Second))
	}
}

// TestReal_TimerAtWokenEarly: a precise timer woken long before its instant (the wall clock set
// back after it was armed) sleeps again instead of watching the clock until then, and does not
// fire.
func TestReal_TimerAtWokenEarly(t *testing.T) {
	p := newPreciseTimer(time.Now().Add(time.Hour), precision)
	defer p.Stop()
	returned := make(chan struct{})
	go func() {
		p.wait() // as if woken now
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(time.Minute):
		t.Fatal("a timer woken an hour early watched the clock")
	}
	select {
	case got := <-p.C():
		t.Fatalf("fired at %s, an hour early", got)
	default:
	}
}
