package jobs

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"scheduler"
	"scheduler/internal/testenv"
)

// nopLedger answers every call at once and remembers nothing: what is left is the runner's own
// cost.
type nopLedger struct{ id atomic.Int64 }

func (l *nopLedger) RaiseAll(context.Context, []string, int64) error { return nil }
func (l *nopLedger) ClaimMany(_ context.Context, token int64, _ string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	out := make([]scheduler.Result, len(slots))
	for i, s := range slots {
		out[i] = scheduler.Result{Run: scheduler.Run{RunID: l.id.Add(1), Job: s.Job, ScheduledAt: s.At, Manual: s.Manual, Status: scheduler.StatusRunning, Token: token, Attempt: 1}, Written: true}
	}
	return out, nil
}
func (l *nopLedger) Reclaim(context.Context, int64, string, scheduler.SlotKey) (scheduler.Run, error) {
	return scheduler.Run{}, fmt.Errorf("no orphans here")
}
func (l *nopLedger) ClaimAheadMany(ctx context.Context, token int64, node string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	return l.ClaimMany(ctx, token, node, slots)
}
func (l *nopLedger) StartMany(_ context.Context, _ int64, refs []scheduler.RunRef) (int, error) {
	return len(refs), nil
}
func (l *nopLedger) ReclaimMany(_ context.Context, _ int64, _ string, slots []scheduler.SlotKey) ([]scheduler.Result, error) {
	return make([]scheduler.Result, len(slots)), nil
}
func (l *nopLedger) RecordMany(context.Context, int64, string, []scheduler.Outcome) ([]scheduler.Result, error) {
	return nil, nil
}
func (l *nopLedger) Complete(context.Context, int64, scheduler.Completion) (scheduler.Run, error) {
	return scheduler.Run{}, nil
}
func (l *nopLedger) CompleteMany(_ context.Context, _ int64, cs []scheduler.Completion) ([]scheduler.Result, error) {
	done := make([]scheduler.Result, len(cs))
	for i := range done {
		done[i].Written = true
	}
	return done, nil
}
func (l *nopLedger) NextAttempt(context.Context, int64, string, int64) (int, error) { return 2, nil }
func (l *nopLedger) Window(context.Context, []string, time.Time, time.Time) ([]scheduler.Run, error) {
	return nil, nil
}
func (l *nopLedger) LastScheduled(context.Context, ...string) (map[string]scheduler.Run, error) {
	return nil, nil
}
func (l *nopLedger) Orphans(context.Context, ...string) ([]scheduler.Run, error) { return nil, nil }
func (l *nopLedger) Fenced(context.Context, string, int64, func(context.Context, scheduler.Tx) error) error {
	return nil
}
func (l *nopLedger) FencedStatements(context.Context, string, int64, string, string) (int64, error) {
	return 0, nil
}
func (l *nopLedger) RunSecret(context.Context, string) (string, error) { return "", nil }

// BenchmarkRunner_Herd measures the runner's own cost of firing a herd: n jobs due at the same
// instant, claimed ahead, started, their no-op runs completed, on a ledger that costs nothing.
// One op is one herd; fire-ns is the cost per fire, which should grow as O(log n); start-p50-ms
// and start-p99-ms are the delays from the herd's fire (the fake clock reaching its slot) to its
// runs' executors starting, on the real clock. live-peak-MB and stacks-peak-MB are the highest
// live heap (as the collector last marked it) and goroutine stacks in use through the herds,
// rest-KB-per-job the live heap per job between two herds.
//
//	go test -run '^$' -bench RunnerHerd -benchtime 20x ./internal/jobs/
func BenchmarkRunner_Herd(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			var (
				finished atomic.Int64
				fireAt   atomic.Int64 // real time of the herd's fire, Unix ns
				next     atomic.Int64
				delays   = make([]time.Duration, b.N*n)
			)
			exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) {
				if i := next.Add(1) - 1; int(i) < len(delays) {
					delays[i] = time.Duration(time.Now().UnixNano() - fireAt.Load())
				}
				return "", nil
			})
			table := herdTable(b, n, exec)
			// Half a second past the claim time of the first herd, at 12:01.
			clock := newFakeClock(t0.Add(59*time.Second + 500*time.Millisecond))
			r, err := New(table, Options{Node: "bench", Ledger: &nopLedger{}, Clock: clock, Logger: discardLogger(),
				Hooks: Hooks{Finished: func(string, scheduler.Status, time.Duration) { finished.Add(1) }}})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { _ = r.Lead(ctx, 1) })
			defer func() { cancel(); wg.Wait() }()
			testenv.Eventually(b, 10*time.Second, time.Millisecond, "claimed", func() bool { return clock.Pending() == 1 && r.claimedAhead() == n })
			runtime.GC()
			rest := liveHeap()
			peaks := samplePeaks()
			b.ResetTimer()
			for i := range b.N {
				testenv.Eventually(b, 10*time.Second, time.Millisecond, "claimed", func() bool { return clock.Pending() == 1 && r.claimedAhead() == n })
				fireAt.Store(time.Now().UnixNano())
				clock.Advance(500 * time.Millisecond) // the slot
				want := int64((i + 1) * n)
				for finished.Load() < want {
					time.Sleep(50 * time.Microsecond)
				}
				testenv.Eventually(b, 10*time.Second, time.Millisecond, "idle", func() bool { return clock.Pending() == 1 && r.claimedAhead() == -1 })
				clock.Advance(59*time.Second + 500*time.Millisecond) // the next herd's claim time
			}
			b.StopTimer()
			live, stacks := peaks()
			b.ReportMetric(float64(live)/(1<<20), "live-peak-MB")
			b.ReportMetric(float64(stacks)/(1<<20), "stacks-peak-MB")
			b.ReportMetric(float64(rest)/float64(n)/1024, "rest-KB-per-job")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "fire-ns")
			slices.Sort(delays)
			b.ReportMetric(float64(delays[len(delays)/2].Microseconds())/1000, "start-p50-ms")
			b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds())/1000, "start-p99-ms")
		})
	}
}

// liveHeap is the heap the last collection marked live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// samplePeaks follows the live heap and the goroutine stacks in use until the returned function
// is called, which returns the highest of each.
func samplePeaks() func() (live, stacks uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	var (
		peak [2]uint64
		wg   sync.WaitGroup
	)
	stop := make(chan struct{})
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak[0], peak[1] = max(peak[0], s[0].Value.Uint64()), max(peak[1], s[1].Value.Uint64())
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	return func() (uint64, uint64) {
		close(stop)
		wg.Wait()
		return peak[0], peak[1]
	}
}

// discardLogger is the daemon's JSON logging at info level, written nowhere: the encoding is
// paid, the terminal is not.
func discardLogger() *zap.Logger {
	cfg := zap.NewProductionEncoderConfig()
	cfg.EncodeTime = zapcore.RFC3339NanoTimeEncoder // as the daemon logs
	enc := zapcore.NewJSONEncoder(cfg)
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(io.Discard), zapcore.InfoLevel))
}

// claimedAhead counts the slots on the fire heap whose claim is answered; -1 when the heap is
// empty and no run is left.
func (r *Runner) claimedAhead() int {
	r.mu.Lock()
	t := r.current
	r.mu.Unlock()
	if t == nil {
		return 0
	}
	got := make(chan int, 1)
	if !t.send(context.Background(), func() {
		k := 0
		if t.heap.Len() == 0 && t.runs == 0 {
			k = -1
		}
		for e := range t.heap.All() {
			if e.claim == claimDone {
				k++
			}
		}
		got <- k
	}) {
		return 0
	}
	return <-got
}

// herdTable is n jobs of exec, all due every minute on the same instant: a herd.
func herdTable(tb testing.TB, n int, exec scheduler.Executor) []Spec {
	table := make([]Spec, n)
	sched := mustSchedule(tb, "@every 1m")
	for i := range table {
		table[i] = Spec{Name: fmt.Sprintf("job%06d", i), Schedule: sched, Executor: exec, Timeout: time.Hour,
			Overlap: OverlapSkip, Misfire: MisfireSkip, Enabled: true}
	}
	return table
}
