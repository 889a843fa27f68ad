package fence

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"scheduler"
)

// TestFenced_RandomizedHistory lets many goroutines act as old and new
// leaders at once: writers write with random tokens of the terms so far
// (mostly stale ones), a raiser starts new terms with RaiseAll or with a
// write. Afterwards the history is checked: no write with token T may
// commit after a write or raise with a newer token T' on the same job has
// committed. A write's commit comes after the end of its function, and a
// raise has committed when its call returns, so a successful write whose
// function ended after a newer token's call returned is a violation. Times
// are Go's monotonic clock; nothing is asserted about durations.
func TestFenced_RandomizedHistory(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, ctx context.Context, s *Store) {
		if err := ensureProbe(ctx, s); err != nil {
			t.Fatal(err)
		}
		h := runRandomHistory(ctx, t, s, 8, 12)
		if v := h.violations(); len(v) > 0 {
			t.Fatalf("%d violations, first: %s", len(v), v[0])
		}
		// Every successful write, and nothing else, is in the table.
		for _, job := range randomJobs {
			for tok, want := range h.committed(job) {
				if n, err := probes(ctx, s, job, tok, "random"); err != nil || n != want {
					t.Fatalf("job %s token %d: %d rows (err %v), want %d", job, tok, n, err, want)
				}
			}
		}
		raced := h.raced()
		t.Logf("%d writes committed, %d refused as stale, %d terms; %d committed with a token older than the newest issued, "+
			"%d of them while a newer token's call was in progress", h.ok, h.stale, h.terms, h.behind, raced)
		if h.stale == 0 || raced == 0 {
			t.Fatalf("the history did not exercise the fence: %d stale, %d old-token commits racing a raise", h.stale, raced)
		}
	})
}

var randomJobs = []string{"alpha", "beta"}

// event is a finished fenced call: a write (end = when its function
// ended, before its commit) or an establishing call (end = when it returned,
// after its commit).
type event struct {
	job        string
	token      int64
	start, end time.Time
}

type history struct {
	mu           sync.Mutex
	writes       []event // successful writes, end = function end
	establishers []event // successful writes and raises, end = return
	ok, stale    int
	terms        int
	behind       int // successes with a token below the newest issued then
}

// violations lists every successful write whose function ended after a
// call with a newer token on the same job had returned.
func (h *history) violations() []string {
	var v []string
	for _, w := range h.writes {
		for _, e := range h.establishers {
			if e.job == w.job && e.token > w.token && w.end.After(e.end) {
				v = append(v, fmt.Sprintf("write with token %d on %s committed after token %d had (function ended %s after)",
					w.token, w.job, e.token, w.end.Sub(e.end)))
			}
		}
	}
	return v
}

// raced counts successful writes whose function ended while a call with a
// newer token on the same job was in progress: the raises that had to wait.
func (h *history) raced() int {
	n := 0
	for _, w := range h.writes {
		for _, e := range h.establishers {
			if e.job == w.job && e.token > w.token && w.end.After(e.start) && w.end.Before(e.end) {
				n++
				break
			}
		}
	}
	return n
}

func (h *history) committed(job string) map[int64]int {
	m := map[int64]int{}
	for _, w := range h.writes {
		if w.job == job {
			m[w.token]++
		}
	}
	return m
}

// runRandomHistory runs writers goroutines against a raiser that starts
// terms new terms, and returns what happened.
func runRandomHistory(ctx context.Context, t *testing.T, s *Store, writers, terms int) *history {
	h := &history{}
	var (
		mu     sync.Mutex
		issued = []int64{10} // tokens of the terms so far
		stop   = make(chan struct{})
		wg     sync.WaitGroup
		errs   = make(chan error, writers+1)
	)
	if err := s.RaiseAll(ctx, randomJobs, 10); err != nil {
		t.Fatal(err)
	}
	tokens := func() ([]int64, int64) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(issued), issued[len(issued)-1]
	}
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				all, newest := tokens()
				// Mostly the newest or the previous term, sometimes any.
				tok := all[max(0, len(all)-1-rng.IntN(2))]
				if rng.IntN(5) == 0 {
					tok = all[rng.IntN(len(all))]
				}
				job := randomJobs[rng.IntN(len(randomJobs))]
				pause := time.Duration(rng.IntN(1500)) * time.Microsecond
				var fnEnd time.Time
				start := time.Now()
				err := s.Fenced(ctx, job, tok, func(_ context.Context, tx scheduler.Tx) error {
					if err := insertProbe(ctx, tx, job, tok, "random"); err != nil {
						return err
					}
					time.Sleep(pause)
					fnEnd = time.Now()
					return nil
				})
				end := time.Now()
				h.mu.Lock()
				switch {
				case err == nil:
					h.ok++
					h.writes = append(h.writes, event{job, tok, start, fnEnd})
					h.establishers = append(h.establishers, event{job, tok, start, end})
					if tok < newest {
						h.behind++
					}
				case errors.Is(err, ErrStale):
					h.stale++
				default:
					h.mu.Unlock()
					errs <- fmt.Errorf("writer %d, write %d with token %d: %w", w, i, tok, err)
					return
				}
				h.mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		defer close(stop)
		rng := rand.New(rand.NewPCG(99, 7))
		for term := 2; term <= terms+1; term++ {
			time.Sleep(time.Duration(2+rng.IntN(8)) * time.Millisecond)
			tok := int64(term * 10)
			mu.Lock()
			issued = append(issued, tok)
			mu.Unlock()
			var err error
			jobs := randomJobs
			start := time.Now()
			if rng.IntN(2) == 0 {
				err = s.RaiseAll(ctx, jobs, tok)
			} else { // the new leader's first write raises the fence
				jobs = randomJobs[rng.IntN(len(randomJobs)):][:1]
				err = s.Fenced(ctx, jobs[0], tok, func(context.Context, scheduler.Tx) error { return nil })
			}
			end := time.Now()
			if err != nil {
				errs <- fmt.Errorf("term %d raise: %w", term, err)
				return
			}
			h.mu.Lock()
			h.terms++
			for _, j := range jobs {
				h.establishers = append(h.establishers, event{j, tok, start, end})
			}
			h.mu.Unlock()
		}
		time.Sleep(5 * time.Millisecond)
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return h
}
