package jobs

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestInParallel(t *testing.T) {
	t.Run("every part once, within the limit", func(t *testing.T) {
		var (
			running, peak atomic.Int32
			calls         [50]atomic.Int32
		)
		seen := map[int]bool{}
		err := inParallel(len(calls), 3, func(i int) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			calls[i].Add(1)
			running.Add(-1)
		}, func(i int) error {
			if seen[i] {
				t.Errorf("part %d handed over twice", i)
			}
			seen[i] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range calls {
			if got := calls[i].Load(); got != 1 {
				t.Errorf("part %d called %d times, want 1", i, got)
			}
		}
		if len(seen) != len(calls) {
			t.Errorf("%d parts handed over, want %d", len(seen), len(calls))
		}
		if p := peak.Load(); p > 3 {
			t.Errorf("%d calls at once, want at most 3", p)
		}
	})
	t.Run("an error stops the rest", func(t *testing.T) {
		boom := errors.New("boom")
		var started, handed atomic.Int32
		err := inParallel(100, 1, func(int) {
			started.Add(1)
			time.Sleep(time.Millisecond) // a ledger call takes a while
		}, func(int) error {
			handed.Add(1)
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want %v", err, boom)
		}
		if n := handed.Load(); n != 1 {
			t.Errorf("done called %d times, want once: nothing is handed over after an error", n)
		}
		// The calls admitted before the error was seen still run; the rest are skipped.
		if n := started.Load(); n >= 50 {
			t.Errorf("%d of 100 calls made after the first one failed, want the rest skipped", n)
		}
	})
	t.Run("nothing to do", func(t *testing.T) {
		if err := inParallel(0, 2, func(int) { t.Error("called") }, func(int) error { return nil }); err != nil {
			t.Fatal(err)
		}
	})
}
