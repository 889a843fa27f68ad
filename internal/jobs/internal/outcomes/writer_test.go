package outcomes

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"scheduler"

	"scheduler/internal/jobs/internal/clock"
	"scheduler/internal/testenv"
)

var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

var errDown = errors.New("store down")

// doneCall is one call of Sink.Done.
type doneCall struct {
	outs []int
	errs []error
}

// fakeSink records the calls a Writer makes; write answers each Write.
type fakeSink struct {
	write func(outs []int) []error

	mu       sync.Mutex
	writes   [][]int
	retrying []int // failures of each Retrying call
	done     chan doneCall
}

func newFakeSink(write func(outs []int) []error) *fakeSink {
	return &fakeSink{write: write, done: make(chan doneCall, 16)}
}

func (s *fakeSink) Ready() {}

func (s *fakeSink) Write(outs []int) []error {
	s.mu.Lock()
	s.writes = append(s.writes, append([]int(nil), outs...))
	s.mu.Unlock()
	return s.write(outs)
}

func (s *fakeSink) Done(outs []int, errs []error) { s.done <- doneCall{outs, errs} }

func (s *fakeSink) Retrying(_ int, _, failures int, _ time.Duration, _ error) {
	s.mu.Lock()
	s.retrying = append(s.retrying, failures)
	s.mu.Unlock()
}

func (s *fakeSink) writeCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.writes)
}

// written is a write that succeeds for every outcome.
func written(outs []int) []error { return make([]error, len(outs)) }

// failing returns a write that fails the first n writes with err, then succeeds.
func failing(n int, err error) func([]int) []error {
	var mu sync.Mutex
	return func(outs []int) []error {
		mu.Lock()
		defer mu.Unlock()
		errs := make([]error, len(outs))
		if n > 0 {
			n--
			for i := range errs {
				errs[i] = err
			}
		}
		return errs
	}
}

// start runs w until the test ends.
func start(t *testing.T, w *Writer[int]) {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(stop) })
	t.Cleanup(func() { close(stop); wg.Wait() })
}

func waitDone(t *testing.T, s *fakeSink) doneCall {
	t.Helper()
	select {
	case d := <-s.done:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome handed over as done")
		return doneCall{}
	}
}

// TestWriter_Batches: the outcomes handed over since the last write are written together, at
// most MaxBatch in one write, and each is handed over as done once.
func TestWriter_Batches(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n          int
		wantWrites []int // sizes
	}{
		{"One", 1, []int{1}},
		{"Several", 5, []int{5}},
		{"PastMaxBatch", MaxBatch + 1, []int{MaxBatch, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeSink(written)
			w := New[int](clock.NewFake(t0), s)
			for i := range tc.n {
				w.Add(i)
			}
			start(t, w)
			seen := 0
			for seen < tc.n {
				d := waitDone(t, s)
				for i, out := range d.outs {
					if out != seen || d.errs[i] != nil {
						t.Fatalf("done %d (err %v), want %d written", out, d.errs[i], seen)
					}
					seen++
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.writes) != len(tc.wantWrites) {
				t.Fatalf("%d writes, want %d", len(s.writes), len(tc.wantWrites))
			}
			for i, want := range tc.wantWrites {
				if len(s.writes[i]) != want {
					t.Fatalf("write %d of %d outcomes, want %d", i, len(s.writes[i]), want)
				}
			}
		})
	}
}

// TestWriter_RetriesAfterBackoff: an outcome whose write failed is not done; it is written again
// after the backoff, on the Writer's clock, and done once written.
func TestWriter_RetriesAfterBackoff(t *testing.T) {
	clk := clock.NewFake(t0)
	s := newFakeSink(failing(2, errDown))
	w := New[int](clk, s)
	start(t, w)
	w.Add(7)
	for i := range 2 {
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "a retry armed", func() bool { return s.writeCount() == i+1 && clk.Pending() == 1 })
		select {
		case d := <-s.done:
			t.Fatalf("done %+v after %d failed writes, want it retried", d, i+1)
		default:
		}
		clk.Advance(MaxRetryDelay)
	}
	if d := waitDone(t, s); len(d.outs) != 1 || d.outs[0] != 7 || d.errs[0] != nil {
		t.Fatalf("done %+v, want 7 written", d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if fmt.Sprint(s.retrying) != "[1 2]" {
		t.Fatalf("retrying reported with failures %v, want [1 2]", s.retrying)
	}
}

// TestWriter_HeldBackWaitsQuietly: an outcome of a job held back (ErrHeldBack) is written again
// every HeldBackRetry, without being reported as a failed write and without growing the backoff
// of the outcomes that failed; once its job runs again it is written and done.
func TestWriter_HeldBackWaitsQuietly(t *testing.T) {
	clk := clock.NewFake(t0)
	heldBack := &scheduler.HeldError{Job: "x", Err: ErrHeldBack}
	s := newFakeSink(failing(3, heldBack))
	w := New[int](clk, s)
	start(t, w)
	w.Add(7)
	for i := range 3 {
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "a retry armed", func() bool { return s.writeCount() == i+1 && clk.Pending() == 1 })
		select {
		case d := <-s.done:
			t.Fatalf("done %+v while held back, want it kept", d)
		default:
		}
		clk.Advance(HeldBackRetry)
	}
	if d := waitDone(t, s); len(d.outs) != 1 || d.outs[0] != 7 || d.errs[0] != nil {
		t.Fatalf("done %+v, want 7 written", d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.retrying) != 0 {
		t.Fatalf("held back reported as failed writes %v, want none", s.retrying)
	}
}

// TestWriter_NotRetryable: an outcome refused by the fence, or whose run is finished already, is
// done at once with its error, never written again.
func TestWriter_NotRetryable(t *testing.T) {
	for _, err := range []error{scheduler.ErrFenced, scheduler.ErrNotRunning, fmt.Errorf("complete run 1: %w", scheduler.ErrNotRunning)} {
		t.Run(err.Error(), func(t *testing.T) {
			s := newFakeSink(failing(1, err))
			w := New[int](clock.NewFake(t0), s)
			start(t, w)
			w.Add(1)
			if d := waitDone(t, s); !errors.Is(d.errs[0], err) {
				t.Fatalf("done with %v, want %v", d.errs[0], err)
			}
			if n := s.writeCount(); n != 1 {
				t.Fatalf("%d writes, want 1", n)
			}
		})
	}
}

// TestWriter_Stop: once stopped, a failure already met is final without another write, and an
// outcome not tried yet is written once, then done even if that write failed.
func TestWriter_Stop(t *testing.T) {
	t.Run("FailureMetIsFinal", func(t *testing.T) {
		clk := clock.NewFake(t0)
		s := newFakeSink(failing(1, errDown))
		w := New[int](clk, s)
		start(t, w)
		w.Add(1)
		testenv.Eventually(t, 10*time.Second, time.Millisecond, "a retry armed", func() bool { return clk.Pending() == 1 })
		w.Stop()
		if d := waitDone(t, s); !errors.Is(d.errs[0], errDown) {
			t.Fatalf("done with %v, want the failure met", d.errs[0])
		}
		if n := s.writeCount(); n != 1 || !w.Stopped() {
			t.Fatalf("%d writes, stopped=%v; want 1 write, stopped", n, w.Stopped())
		}
	})
	t.Run("NotTriedIsWrittenOnce", func(t *testing.T) {
		s := newFakeSink(failing(1, errDown))
		w := New[int](clock.NewFake(t0), s)
		w.Stop()
		w.Add(1)
		start(t, w)
		if d := waitDone(t, s); !errors.Is(d.errs[0], errDown) {
			t.Fatalf("done with %v, want the failed write's error", d.errs[0])
		}
		if n := s.writeCount(); n != 1 {
			t.Fatalf("%d writes, want 1", n)
		}
	})
}

// TestRetryable: only a write the store did not answer is tried again.
func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errDown, true},
		{scheduler.ErrFenced, false},
		{fmt.Errorf("wrapped: %w", scheduler.ErrFenced), false},
		{scheduler.ErrNotRunning, false},
	} {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%v)=%v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestBackoff: the wait is drawn from the upper half of the doubled, capped delay.
func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		failures int
		full     time.Duration
	}{
		{1, retryDelay},
		{2, 2 * retryDelay},
		{100, MaxRetryDelay},
	} {
		for range 100 {
			if got := Backoff(tc.failures); got < tc.full/2 || got > tc.full {
				t.Fatalf("Backoff(%d)=%s, want within [%s, %s]", tc.failures, got, tc.full/2, tc.full)
			}
		}
	}
}
