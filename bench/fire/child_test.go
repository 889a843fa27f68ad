package fire

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/robfig/cron/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/fence/fencetest"
	"scheduler/internal/jobs"
	"scheduler/internal/schedule"
)

// profileEnv names a file for a CPU profile of each child (the last child's is kept).
const profileEnv = "SCHEDULER_BENCH_FIRE_PROFILE"

// runChild measures one case and prints its result as JSON; it returns the exit code.
func runChild(js string) int {
	var c fireCase
	if err := json.Unmarshal([]byte(js), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if path := os.Getenv(profileEnv); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	var (
		r   fireResult
		err error
	)
	if c.Runner == "robfig" {
		r, err = robfigCase(ctx, c)
	} else {
		r, err = schedulerCase(ctx, c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
	return 0
}

// recorder keeps each start's slot and delay.
type recorder struct {
	slots  []int64 // Unix seconds of the slot
	delays []time.Duration
	next   atomic.Int64
	ended  atomic.Int64 // runs whose outcome was written (scheduler) or that returned (robfig)
}

func newRecorder(n int) *recorder {
	return &recorder{slots: make([]int64, n), delays: make([]time.Duration, n)}
}

func (r *recorder) add(slot time.Time, now time.Time) {
	if i := r.next.Add(1) - 1; int(i) < len(r.slots) {
		r.slots[i], r.delays[i] = slot.Unix(), now.Sub(slot)
	}
}

// herds is the period's schedule: herd k is due at first + k*period.
type herds struct {
	first  time.Time
	period time.Duration
	count  int // warm-up herd included
}

// plan picks the first herd far enough ahead for setup to finish.
func plan(c fireCase, setup time.Duration) herds {
	p := time.Duration(c.Period) * time.Second
	first := time.Now().Add(setup + p/2).Truncate(p).Add(p)
	return herds{first: first, period: p, count: c.Herds + 1}
}

func (h herds) at(k int) time.Time { return h.first.Add(time.Duration(k) * h.period) }

// measure waits through the herds, taking CPU time from the end of the warm-up herd to the end
// of the last one (half a period after each slot), then summarizes the measured herds.
func measure(ctx context.Context, c fireCase, h herds, rec *recorder) (fireResult, error) {
	var (
		r     fireResult
		cpu0  time.Duration
		ended int64
		peaks *peakSampler
	)
	for k := 0; k < h.count; k++ {
		end := h.at(k).Add(h.period / 2)
		if err := sleepUntil(ctx, end); err != nil {
			return r, err
		}
		if k == 0 {
			cpu0, ended = cpuTime(), rec.ended.Load()
			peaks = samplePeaks(10*time.Millisecond, heapProfilePath(c))
			continue
		}
		if want := ended + int64(k*c.Jobs); rec.ended.Load() < want {
			r.Late += int(want - rec.ended.Load())
		}
	}
	cpu := cpuTime() - cpu0
	if peaks != nil {
		r.LiveMB, r.StacksMB, r.Goroutines = peaks.end()
	}
	n := min(int(rec.next.Load()), len(rec.slots))
	var all []time.Duration
	byHerd := map[int64][]time.Duration{}
	measured := map[int64]bool{}
	for k := 1; k < h.count; k++ {
		measured[h.at(k).Unix()] = true
	}
	for i := range n {
		if !measured[rec.slots[i]] {
			continue
		}
		all = append(all, rec.delays[i])
		byHerd[rec.slots[i]] = append(byHerd[rec.slots[i]], rec.delays[i])
	}
	// A runner that does not keep up starts fewer runs in the measured herds than it should:
	// reported, with the delays of the runs that did start.
	r.Missing = max(c.Herds*c.Jobs-len(all), 0)
	if len(all) == 0 {
		return r, nil
	}
	slices.Sort(all)
	r.Fires = len(all)
	r.P50, r.P99, r.Max = ms(pct(all, 0.50)), ms(pct(all, 0.99)), ms(all[len(all)-1])
	for k := 1; k < h.count; k++ {
		d := byHerd[h.at(k).Unix()]
		slices.Sort(d)
		r.HerdP99 = append(r.HerdP99, ms(pct(d, 0.99)))
	}
	r.CPU = float64(cpu.Microseconds()) / float64(r.Fires)
	r.RSS = rssPeakMB()
	if path := os.Getenv(profileEnv); path != "" {
		if f, err := os.Create(path + ".heap"); err == nil {
			_ = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	r.HeapMB, r.StackMB, r.SysMB = float64(m.HeapInuse)/(1<<20), float64(m.StackSys)/(1<<20), float64(m.Sys)/(1<<20)
	return r, nil
}

func robfigCase(ctx context.Context, c fireCase) (fireResult, error) {
	h := plan(c, 2*time.Second+time.Duration(c.Jobs)*20*time.Microsecond)
	rec := newRecorder((c.Herds + 2) * c.Jobs)
	p := time.Duration(c.Period) * time.Second
	cr := cron.New(cron.WithSeconds())
	for range c.Jobs {
		_, err := cr.AddFunc(c.Spec, func() {
			now := time.Now()
			rec.add(now.Truncate(p), now)
			rec.ended.Add(1)
		})
		if err != nil {
			return fireResult{}, err
		}
	}
	if time.Now().After(h.first.Add(-p / 2)) {
		return fireResult{}, fmt.Errorf("setup took too long")
	}
	// Jobs start at the first due instant after Start; only herds from h.first on are counted.
	if err := sleepUntil(ctx, h.first.Add(-p/2)); err != nil {
		return fireResult{}, err
	}
	rec.next.Store(0)
	rec.ended.Store(0)
	cr.Start()
	defer func() { <-cr.Stop().Done() }()
	return measure(ctx, c, h, rec)
}

func schedulerCase(ctx context.Context, c fireCase) (fireResult, error) {
	var r fireResult
	store, err := fence.Open(ctx, fence.Config{DSN: c.DSN, Path: c.Path, MaxConns: 16}, zap.NewNop())
	if err != nil {
		return r, err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return r, err
	}
	var led scheduler.Ledger = store
	if !c.Batch {
		led = fencetest.Unbatched{Ledger: led}
	}
	rec := newRecorder((c.Herds + 2) * c.Jobs)
	exec := execFunc(func(_ context.Context, run scheduler.Attempt) (string, error) {
		rec.add(run.Slot, time.Now())
		return "", nil
	})
	sched, err := schedule.Parse(c.Spec, time.UTC)
	if err != nil {
		return r, err
	}
	table := make([]jobs.Spec, c.Jobs)
	for i := range table {
		table[i] = jobs.Spec{Name: "job" + strconv.Itoa(i), Schedule: sched, Executor: exec, Timeout: time.Minute,
			Overlap: jobs.OverlapSkip, Misfire: jobs.MisfireSkip, Catchup: time.Minute, Enabled: true}
	}
	ahead := time.Duration(0)
	if c.ClaimAhead != "" {
		if ahead, err = time.ParseDuration(c.ClaimAhead); err != nil {
			return r, err
		}
	}
	leading := make(chan struct{})
	var once sync.Once
	lg := infoLogger().WithOptions(zap.Hooks(func(e zapcore.Entry) error {
		if e.Message == "leading" {
			once.Do(func() { close(leading) })
		}
		return nil
	}))
	runner, err := jobs.New(table, jobs.Options{
		Node: "bench", Ledger: led, Logger: lg, ClaimAhead: ahead,
		Hooks: jobs.Hooks{Finished: func(string, scheduler.Status, time.Duration) { rec.ended.Add(1) }},
	})
	if err != nil {
		return r, err
	}
	lctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	leadErr := make(chan error, 1)
	start := time.Now()
	wg.Go(func() {
		leadErr <- runner.Lead(lctx, 1)
	})
	// Lead takes the table over (fences, catch-up) before firing; the herds start after it.
	select {
	case <-leading:
	case err := <-leadErr:
		stop()
		return r, fmt.Errorf("lead: %w", err)
	}
	takeover := time.Since(start)
	stopPruning := startPruner(lctx, c, store)
	h := plan(c, time.Second)
	r, err = measure(ctx, c, h, rec)
	r.Takeover = takeover.Seconds()
	r.Pruned = stopPruning()
	stop()
	wg.Wait()
	if lerr := <-leadErr; lerr != nil && err == nil {
		err = fmt.Errorf("lead: %w", lerr)
	}
	return r, err
}

// infoLogger is the daemon's JSON logging at info level, written nowhere: the encoding is paid,
// the terminal is not.
func infoLogger() *zap.Logger {
	cfg := zap.NewProductionEncoderConfig()
	cfg.EncodeTime = zapcore.RFC3339NanoTimeEncoder // as the daemon logs
	enc := zapcore.NewJSONEncoder(cfg)
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(io.Discard), zapcore.InfoLevel))
}

type execFunc func(ctx context.Context, r scheduler.Attempt) (string, error)

func (f execFunc) Execute(ctx context.Context, r scheduler.Attempt) (string, error) { return f(ctx, r) }

func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssPeakMB is the process's peak resident set (VmHWM) in MB.
func rssPeakMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func pct(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
