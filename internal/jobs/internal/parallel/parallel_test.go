package parallel

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestDo(t *testing.T) {
	t.Run("every part once, within the limit", func(t *testing.T) {
		var (
			running, peak atomic.Int32
			calls         [50]atomic.Int32
		)
		seen := map[int]bool{}
		err := Do(len(calls), 3, func(i int) {
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
		err := Do(100, 1, func(int) {
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
		if err := Do(0, 2, func(int) { t.Error("called") }, func(int) error { return nil }); err != nil {
			t.Fatal(err)
		}
	})
}

// TestBatches: the items are split into batches of at most size, each written once and settled
// with its own bounds, none left out.
func TestBatches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n, size int
		want    [][2]int // [lo, hi) of each batch, by k
	}{
		{"One", 3, 10, [][2]int{{0, 3}}},
		{"Exact", 20, 10, [][2]int{{0, 10}, {10, 20}}},
		{"Remainder", 25, 10, [][2]int{{0, 10}, {10, 20}, {20, 25}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu      sync.Mutex
				written = map[int][2]int{}
			)
			settled := map[int][2]int{}
			err := Batches(tc.n, tc.size, 2, func(k, lo, hi int) {
				mu.Lock()
				defer mu.Unlock()
				written[k] = [2]int{lo, hi}
			}, func(k, lo, hi int) error {
				settled[k] = [2]int{lo, hi}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(written) != len(tc.want) || len(settled) != len(tc.want) {
				t.Fatalf("written %v settled %v, want %v", written, settled, tc.want)
			}
			for k, want := range tc.want {
				if written[k] != want || settled[k] != want {
					t.Fatalf("batch %d written %v settled %v, want %v", k, written[k], settled[k], want)
				}
			}
		})
	}
}

// TestParts: items are split into at most parts parts, each written once; a part's error is
// returned.
func TestParts(t *testing.T) {
	var mu sync.Mutex
	var seen []int
	parts := 0
	err := Parts(context.Background(), []int{1, 2, 3, 4, 5}, 2, func(_ context.Context, part []int) error {
		mu.Lock()
		defer mu.Unlock()
		parts++
		seen = append(seen, part...)
		return nil
	})
	slices.Sort(seen)
	if err != nil || parts != 2 || !slices.Equal(seen, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("err %v, %d parts, items %v; want 2 parts of all 5 items", err, parts, seen)
	}
	boom := errors.New("boom")
	if err := Parts(context.Background(), []int{1, 2}, 2, func(context.Context, []int) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v, want %v", err, boom)
	}
}
