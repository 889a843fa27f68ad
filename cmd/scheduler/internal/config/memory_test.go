package config

import (
	"fmt"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"scheduler/cmd/scheduler/internal/config/configtest"
	"scheduler/internal/schedule"
)

// bigTable is a configuration of n exec jobs that set a few keys and inherit the rest.
func bigTable(n int) string {
	var sb strings.Builder
	sb.WriteString("node: n1\nstore:\n  dsn: \"postgres://u@127.0.0.1/db\"\netcd:\n  endpoints: [\"127.0.0.1:2379\"]\njobs:\n")
	for i := range n {
		fmt.Fprintf(&sb, "  - {name: job%d, schedule: \"0 0 0 1 1 *\", type: exec, command: [\"/bin/true\"], timeout: 10s}\n", i)
	}
	return sb.String()
}

// TestLoadTable_JobsShareTheirInheritedKeys: which keys a job took from `defaults` is kept
// once for all the jobs that took the same keys, not once per job.
func TestLoadTable_JobsShareTheirInheritedKeys(t *testing.T) {
	l, err := LoadTable(configtest.Write(t, bigTable(3)+`  - {name: own, schedule: "@daily", type: exec, command: [/bin/true], timeout: 10s, retries: 2}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs := l.Config.Jobs
	first := reflect.ValueOf(jobs[0].inherited).UnsafePointer()
	for i, j := range jobs[1:3] {
		if p := reflect.ValueOf(j.inherited).UnsafePointer(); p != first {
			t.Fatalf("jobs[%d] keeps its own set of inherited keys, want the one of jobs[0]", i+1)
		}
	}
	own := jobs[3].inherited
	if own["retries"] || !own["overlap"] || !own["history.max_runs"] {
		t.Fatalf("jobs[3] inherited %v, want overlap and history.max_runs, not retries", own)
	}
	if reflect.ValueOf(own).UnsafePointer() == first {
		t.Fatal("jobs[3] sets retries itself and shares the set of the jobs that inherit it")
	}
}

// TestLoadTable_Memory bounds what loading a large table holds: the live heap at its peak
// during the load, and what stays live with the loaded table. A load of many jobs once held
// every job's mapping, with every default merged in, beside the decoded jobs, and a set of
// inherited keys per job for the daemon's life.
func TestLoadTable_Memory(t *testing.T) {
	const n = 20000
	path := configtest.Write(t, bigTable(n))
	runtime.GC()
	base := liveHeap()

	peak := sampleLiveHeap()
	l, err := LoadTable(path, nil)
	top := peak()
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	held := liveHeap()
	runtime.KeepAlive(l)

	perJob := func(b uint64) float64 { return float64(int64(b)-int64(base)) / n }
	// The bounds lie between what a load took before the jobs were decoded one by one and
	// what it takes now, with room for the collector's timing and the race detector's.
	if got := perJob(top); got > 3400 {
		t.Errorf("live heap at the load's peak %.0f B per job, want at most 3400", got)
	}
	if got := perJob(held); got > 1600 {
		t.Errorf("live heap held with the loaded table %.0f B per job, want at most 1600", got)
	}
	t.Logf("per job: peak %.0f B, held %.0f B", perJob(top), perJob(held))
}

// liveHeap is the heap the last collection marked live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleLiveHeap follows the live heap until the returned function is called, which returns the
// highest seen.
func sampleLiveHeap() func() uint64 {
	var (
		peak uint64
		wg   sync.WaitGroup
	)
	stop := make(chan struct{})
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, liveHeap())
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(stop)
		wg.Wait()
		return max(peak, liveHeap())
	}
}

// TestLoadTable_JobsShareTheirZonesAndSchedules: a zone is loaded, and a schedule parsed in it,
// once for all the jobs that name them; a zone's transitions alone take kilobytes, once per job
// in a large table otherwise.
func TestLoadTable_JobsShareTheirZonesAndSchedules(t *testing.T) {
	l, err := LoadTable(configtest.Write(t, `
jobs:
  - {name: a, schedule: "0 2 * * *", timezone: Europe/Berlin, type: exec, command: [/bin/true]}
  - {name: b, schedule: "0 2 * * *", timezone: Europe/Berlin, type: exec, command: [/bin/true]}
  - {name: c, schedule: "0 3 * * *", timezone: Europe/Berlin, type: exec, command: [/bin/true]}
  - {name: d, schedule: "0 2 * * *", timezone: America/New_York, type: exec, command: [/bin/true]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := func(i int) *schedule.Schedule { return l.Config.Jobs[i].ParsedSchedule() }
	switch {
	case s(0) != s(1):
		t.Fatal("jobs[0] and jobs[1] have the same schedule in the same zone, parsed twice")
	case s(0) == s(2) || s(0) == s(3):
		t.Fatal("jobs of different schedules or zones share a parsed schedule")
	case s(0).Location() != s(2).Location():
		t.Fatal("jobs[0] and jobs[2] name the same zone, loaded twice")
	case s(3).Location().String() != "America/New_York" || s(2).String() != "0 3 * * *":
		t.Fatalf("jobs[3] in %v, jobs[2] at %q", s(3).Location(), s(2).String())
	}
}

// BenchmarkLoadTable measures the memory of reading a table of n exec jobs as the daemon does
// (LoadTable): peak-live-MB is the highest live heap the collector marked during the load,
// held-MB what stays live with the loaded table, alloc-MB what the load allocated in all.
//
//	go test -run '^$' -bench LoadTable -benchtime 1x ./cmd/scheduler/internal/config/
func BenchmarkLoadTable(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			path := configtest.Write(b, bigTable(n))
			var peak, held, alloc float64
			for range b.N {
				runtime.GC()
				base := liveHeap()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				top := sampleLiveHeap()
				l, err := LoadTable(path, nil)
				p := top()
				if err != nil {
					b.Fatal(err)
				}
				runtime.ReadMemStats(&m1)
				runtime.GC()
				peak += float64(p - base)
				held += float64(liveHeap() - base)
				alloc += float64(m1.TotalAlloc - m0.TotalAlloc)
				runtime.KeepAlive(l)
			}
			k := float64(b.N) * (1 << 20)
			b.ReportMetric(peak/k, "peak-live-MB")
			b.ReportMetric(held/k, "held-MB")
			b.ReportMetric(alloc/k, "alloc-MB")
		})
	}
}
