package jobs

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"scheduler"
	"scheduler/internal/testenv"
)

// TestFireEntry_IsCompact: every job's next slot holds an entry for as long as the table is
// led, so what it keeps of a claim is the run's key, not the whole run.
func TestFireEntry_IsCompact(t *testing.T) {
	if got := unsafe.Sizeof(fireEntry{}); got > 192 {
		t.Fatalf("a fire entry takes %d B, want at most 192", got)
	}
}

// TestJobState_IsCompact: every job holds a jobState for as long as the table is led, and every
// run of a herd may wait in the completer at once, so the rare parts of each (a job's block, the
// loop's report of a run) are kept out of line.
func TestJobState_IsCompact(t *testing.T) {
	if got := unsafe.Sizeof(jobState{}); got > 128 {
		t.Errorf("a job's state takes %d B, want at most 128", got)
	}
	if got := unsafe.Sizeof(finished{}); got > 176 {
		t.Errorf("a finished run takes %d B, want at most 176", got)
	}
}

// TestRunner_HerdMemory bounds the live heap of a large table led by the runner: at rest, each
// job's next slot claimed ahead, and at the peak of a herd of every job, from the fire until
// each run's outcome is written. The ledger answers at once, so the whole herd is in flight
// together.
func TestRunner_HerdMemory(t *testing.T) {
	const n = 20000
	runtime.GC()
	base := liveHeap()

	exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) { return "", nil })
	r, clock, finished := leadHerd(t, n, exec, 0)
	testenv.Eventually(t, 30*time.Second, time.Millisecond, "claimed", func() bool { return clock.Pending() == 1 && r.claimedAhead() == n })
	runtime.GC()
	rest := liveHeap()
	peak := samplePeaks()
	clock.Advance(500 * time.Millisecond) // the slot
	testenv.Eventually(t, 30*time.Second, time.Millisecond, "finished", func() bool { return finished.Load() == n })
	testenv.Eventually(t, 30*time.Second, time.Millisecond, "idle", func() bool { return clock.Pending() == 1 && r.claimedAhead() == -1 })
	top, _ := peak()

	perJob := func(b uint64) float64 { return float64(int64(b)-int64(base)) / n }
	// The bound at rest lies between what the runner held before a job's block state went out
	// of line and what it holds now. The herd's peak moves with the collector's timing by more
	// than what the changes saved there, so its bound only catches a herd that holds far more
	// per run than it does.
	if got := perJob(rest); got > 620 {
		t.Errorf("at rest %.0f B per job, want at most 620", got)
	}
	if got := perJob(top); got > 2600 {
		t.Errorf("at the herd's peak %.0f B per job, want at most 2600", got)
	}
	t.Logf("per job: at rest %.0f B, at the herd's peak %.0f B", perJob(rest), perJob(top))
}

// TestRunner_LetsGoOfFiredSlots: once a herd has fired and its jobs' next slots are queued, no
// entry of the herd's slots is held any longer, by the claim batches that carried them or
// otherwise, so a herd's memory is not held until the next herd.
func TestRunner_LetsGoOfFiredSlots(t *testing.T) {
	const n = 2*maxClaimBatch + 500 // claimed in three batches
	var collected atomic.Int64
	exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) { return "", nil })
	r, clock, finished := leadHerd(t, n, exec, 0)
	testenv.Eventually(t, 30*time.Second, time.Millisecond, "claimed", func() bool { return clock.Pending() == 1 && r.claimedAhead() == n })
	r.mu.Lock()
	tn := r.current
	r.mu.Unlock()
	done := make(chan struct{})
	if !tn.send(context.Background(), func() {
		for e := range tn.heap.All() {
			runtime.SetFinalizer(e, func(*fireEntry) { collected.Add(1) })
		}
		close(done)
	}) {
		t.Fatal("the term ended before its herd fired")
	}
	<-done
	clock.Advance(500 * time.Millisecond) // the slot
	testenv.Eventually(t, 30*time.Second, time.Millisecond, "finished", func() bool { return finished.Load() == n })
	testenv.Eventually(t, 30*time.Second, time.Millisecond, "idle", func() bool { return clock.Pending() == 1 && r.claimedAhead() == -1 })
	ok := false
	for range 50 {
		runtime.GC()
		if collected.Load() == n {
			ok = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !ok {
		t.Fatalf("%d of the herd's %d slot entries let go after it fired, want all", collected.Load(), n)
	}
}

// TestRunner_HerdInChunks: a herd larger than the part fired at once (fireChunk) runs every
// job's slot once, whether its runs were claimed ahead or are claimed when they fire, and queues
// every job's next slot.
func TestRunner_HerdInChunks(t *testing.T) {
	const n = 2*fireChunk + 7
	for _, tc := range []struct {
		name  string
		ahead time.Duration
	}{{"ClaimedAhead", 0}, {"ClaimedAtFire", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				runs = map[string]int{}
			)
			exec := execFunc(func(_ context.Context, a scheduler.Attempt) (string, error) {
				mu.Lock()
				runs[a.Job]++
				mu.Unlock()
				return "", nil
			})
			r, clock, finished := leadHerd(t, n, exec, tc.ahead)
			for herd := 1; herd <= 2; herd++ {
				testenv.Eventually(t, 30*time.Second, time.Millisecond, "armed", func() bool {
					return clock.Pending() == 1 && (tc.ahead >= 0 && r.claimedAhead() == n || tc.ahead < 0 && r.queuedSlots() == n)
				})
				clock.Advance(500 * time.Millisecond) // the slot
				testenv.Eventually(t, 30*time.Second, time.Millisecond, "finished", func() bool { return finished.Load() >= int64(herd*n) })
				testenv.Eventually(t, 30*time.Second, time.Millisecond, "next slots queued", func() bool {
					return clock.Pending() == 1 && (tc.ahead >= 0 && r.claimedAhead() == -1 || tc.ahead < 0 && r.queuedSlots() == n)
				})
				clock.Advance(59*time.Second + 500*time.Millisecond) // the next herd's claim time
			}
			mu.Lock()
			defer mu.Unlock()
			if len(runs) != n {
				t.Fatalf("%d jobs ran, want %d", len(runs), n)
			}
			for job, k := range runs {
				if k != 2 {
					t.Fatalf("job %s ran %d times in two herds, want 2", job, k)
				}
			}
		})
	}
}

// queuedSlots counts the slots waiting to fire or to be claimed; -1 when the term ended.
func (r *Runner) queuedSlots() int {
	r.mu.Lock()
	t := r.current
	r.mu.Unlock()
	got := make(chan int, 1)
	if t == nil || !t.send(context.Background(), func() { got <- t.heap.Len() + t.queue.Len() }) {
		return -1
	}
	return <-got
}

// leadHerd leads a table of n jobs of exec, all due on the same instant every minute, on a
// ledger that answers at once, half a second before the first herd's claim time; it returns the
// runner, its clock and the count of runs finished. The term ends with the test.
func leadHerd(t *testing.T, n int, exec scheduler.Executor, ahead time.Duration) (*Runner, *fakeClock, *atomic.Int64) {
	t.Helper()
	var finished atomic.Int64
	clock := newFakeClock(t0.Add(59*time.Second + 500*time.Millisecond))
	r, err := New(herdTable(t, n, exec), Options{Node: "herd", Ledger: &nopLedger{}, Clock: clock, Logger: discardLogger(),
		ClaimAhead: ahead, Hooks: Hooks{Finished: func(string, scheduler.Status, time.Duration) { finished.Add(1) }}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Lead(ctx, 1) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return r, clock, &finished
}
