package jobs

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"scheduler"
)

// TestRunner_ReloadWhileHerdLaunches: reloads replace every job's spec while a herd of slots
// launches; each run's goroutine must read only what launch took for it on the loop, which -race
// checks.
func TestRunner_ReloadWhileHerdLaunches(t *testing.T) {
	const jobs = 200
	var started atomic.Int32
	release := make(chan struct{})
	// Each run holds on until reloads have landed after the whole herd started.
	hold := execFunc(func(ctx context.Context, _ scheduler.Attempt) (string, error) {
		started.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "ok", nil
	})
	table := make([]Spec, jobs)
	for i := range table {
		table[i] = spec(t, fmt.Sprintf("job%03d", i), hold, nil)
	}
	h := newHarness(t, t0.Add(30*time.Second), table...)
	h.lead(token)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	wg.Go(func() {
		after := 0 // reloads since the whole herd started
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			changed := slices.Clone(table)
			for j := range changed {
				changed[j].Retries = i % 3
			}
			if err := h.runner.SetTable(changed); err != nil {
				t.Error(err)
				return
			}
			if started.Load() == jobs {
				if after++; after == 10 {
					close(release)
				}
			}
		}
	})
	h.advance(30*time.Second, 1) // 12:01: the herd fires
	for i := range jobs {
		h.waitRows(fmt.Sprintf("job%03d", i), "the herd's run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
	}
}
