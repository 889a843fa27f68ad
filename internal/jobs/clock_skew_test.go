package jobs

import (
	"context"
	"strings"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// storeClock is a fakeLedger whose store keeps its own time: the runner's clock moved by skew.
type storeClock struct {
	*fakeLedger
	clk  *fakeClock
	skew time.Duration
}

func (l *storeClock) StoreNow(context.Context) (time.Time, bool, error) {
	return l.clk.Now().Add(l.skew), true, nil
}

// TestRunner_TakeoverClockAhead: a new leader whose clock runs ahead of its store's.
//   - An hour ahead: it does not lead (the term ends with the skew named) and writes nothing.
//     Before, its catch-up recorded an hour of slots still to come as missed, and ran one of them
//     an hour early; a leader with a right clock then found them all done.
//   - Three seconds ahead: it leads, and decides by the store's time: the slot 12:05, due by its
//     own clock but not yet by the store's, is run, not recorded missed (misfire skip).
func TestRunner_TakeoverClockAhead(t *testing.T) {
	for name, skew := range map[string]time.Duration{"hour": -time.Hour, "seconds": -3 * time.Second} {
		t.Run(name, func(t *testing.T) {
			clk := newFakeClock(t0.Add(5*time.Minute + time.Second)) // 12:05:01 by its own clock
			led := &storeClock{fakeLedger: newFakeLedger(), clk: clk, skew: skew}
			led.put(scheduler.Run{Job: "job", ScheduledAt: t0.Add(time.Minute), Status: scheduler.StatusSucceeded, Token: 3, Attempt: 1})
			exec := &countingExec{}
			r := mustNew(t, []Spec{spec(t, "job", exec, func(s *Spec) { s.Misfire = MisfireSkip })}, Options{Node: "n1", Ledger: led, Clock: clk})
			l := leadAsync(t, r, token)
			if name == "hour" {
				testenv.Eventually(t, 10*time.Second, time.Millisecond, "the term's end", func() bool { over, _ := l.returned(); return over })
				if _, err := l.returned(); err == nil || !strings.Contains(err.Error(), "1h0m0s ahead of the store's") {
					t.Fatalf("Lead=%v, want it refused, naming the skew", err)
				}
				if rows := led.snapshot("job"); len(rows) != 1 {
					t.Fatalf("%d rows, want the one before the takeover alone: %+v", len(rows), rows)
				}
				return
			}
			row := settled(t, led.fakeLedger, "job", t0.Add(5*time.Minute))
			if row.Status != scheduler.StatusSucceeded || exec.n.Load() != 1 {
				t.Fatalf("slot 12:05: %+v, %d runs; want it run once", row, exec.n.Load())
			}
		})
	}
}
