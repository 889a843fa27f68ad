package clock

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// TestFake_Timers: a timer fires when the clock is advanced to it, not before; a stopped one
// never fires; one of no duration fires at once.
func TestFake_Timers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		d         time.Duration
		advance   time.Duration
		stop      bool
		wantFired bool
	}{
		{"Due", time.Second, time.Second, false, true},
		{"NotYet", time.Second, time.Second - time.Nanosecond, false, false},
		{"Stopped", time.Second, time.Second, true, false},
		{"AtOnce", 0, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewFake(t0)
			tm := c.NewTimer(tc.d)
			if tc.stop && !tm.Stop() {
				t.Fatal("Stop of an armed timer reported it not armed")
			}
			c.Advance(tc.advance)
			if got := c.Now(); !got.Equal(t0.Add(tc.advance)) {
				t.Fatalf("now=%s, want %s", got, t0.Add(tc.advance))
			}
			select {
			case at := <-tm.C():
				if !tc.wantFired {
					t.Fatalf("fired at %s, want not fired", at)
				}
			default:
				if tc.wantFired {
					t.Fatal("not fired, want fired")
				}
			}
		})
	}
}

// TestFake_AfterFuncAndPending: Pending counts the armed timers; AfterFunc's function runs once
// its time comes.
func TestFake_AfterFuncAndPending(t *testing.T) {
	c := NewFake(t0)
	called := make(chan struct{})
	c.AfterFunc(time.Minute, func() { close(called) })
	c.NewTimer(time.Hour)
	if n := c.Pending(); n != 2 {
		t.Fatalf("pending=%d, want 2", n)
	}
	c.Advance(time.Minute)
	select {
	case <-called:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterFunc's function not called")
	}
	if n := c.Pending(); n != 1 {
		t.Fatalf("pending=%d after the first fired, want 1", n)
	}
}
