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
	if got := unsafe.Sizeof(fireEntry{}); got > 208 {
		t.Fatalf("a fire entry takes %d B, want at most 208", got)
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

	var finished atomic.Int64
	exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) { return "", nil })
	table := herdTable(t, n, exec)
	clock := newFakeClock(t0.Add(59*time.Second + 500*time.Millisecond))
	r, err := New(table, Options{Node: "mem", Ledger: &nopLedger{}, Clock: clock, Logger: discardLogger(),
		Hooks: Hooks{Finished: func(string, scheduler.Status, time.Duration) { finished.Add(1) }}})
	if err != nil {
		t.Fatal(err)
	}
	table = nil
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Lead(ctx, 1) })
	defer func() { cancel(); wg.Wait() }()

	testenv.Eventually(t, 30*time.Second, time.Millisecond, "claimed", func() bool { return clock.Pending() == 1 && r.claimedAhead() == n })
	runtime.GC()
	rest := liveHeap()
	peak := samplePeaks()
	clock.Advance(500 * time.Millisecond) // the slot
	testenv.Eventually(t, 30*time.Second, time.Millisecond, "finished", func() bool { return finished.Load() == n })
	testenv.Eventually(t, 30*time.Second, time.Millisecond, "idle", func() bool { return clock.Pending() == 1 && r.claimedAhead() == -1 })
	top, _ := peak()

	perJob := func(b uint64) float64 { return float64(int64(b)-int64(base)) / n }
	// The bound at rest lies between what the runner held before its entries kept only a
	// claim's key and what it holds now. The herd's peak moves with the collector's timing by
	// more than what this change saved there, so its bound only catches a herd that holds far
	// more per run than it does.
	if got := perJob(rest); got > 720 {
		t.Errorf("at rest %.0f B per job, want at most 720", got)
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
	var finished, collected atomic.Int64
	exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) { return "", nil })
	table := herdTable(t, n, exec)
	clock := newFakeClock(t0.Add(59*time.Second + 500*time.Millisecond))
	r, err := New(table, Options{Node: "mem", Ledger: &nopLedger{}, Clock: clock, Logger: discardLogger(),
		Hooks: Hooks{Finished: func(string, scheduler.Status, time.Duration) { finished.Add(1) }}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Lead(ctx, 1) })
	defer func() { cancel(); wg.Wait() }()

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
