package fire

import (
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"
)

// heapProfileEnv names a file for a heap profile of each child taken at its peak live heap: the
// name is suffixed with the case (runner, store, jobs, soft limit), and the last child of a case
// keeps its file.
const heapProfileEnv = "SCHEDULER_BENCH_FIRE_HEAP_PROFILE"

// heapProfilePath is where the child of c writes its heap profile; empty for none.
func heapProfilePath(c fireCase) string {
	path := os.Getenv(heapProfileEnv)
	if path == "" {
		return ""
	}
	path += fmt.Sprintf("-%s-%s-%d", c.Runner, c.Store, c.Jobs)
	if c.ClaimAhead != "" {
		path += "-at-fire"
	}
	if c.MemLimit != "" {
		path += "-limit"
	}
	return path
}

// peakMetrics are the runtime's figures a peakSampler follows.
var peakMetrics = []string{
	"/gc/heap/live:bytes",               // marked live by the last collection
	"/memory/classes/heap/stacks:bytes", // goroutine stacks in use
	"/sched/goroutines:goroutines",
}

// peakSampler follows the live heap, the stacks in use and the goroutines through the measured
// herds and keeps the highest of each: the end of a herd shows what is left, not what a herd
// needed while its runs were in flight and its outcomes unwritten.
type peakSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	peak [3]uint64
}

// samplePeaks starts a sampler every interval; a heap profile is written to path (when set)
// each time the live heap reaches a new high, so the file holds the peak's allocations.
func samplePeaks(interval time.Duration, path string) *peakSampler {
	p := &peakSampler{stop: make(chan struct{})}
	s := make([]metrics.Sample, len(peakMetrics))
	for i, name := range peakMetrics {
		s[i].Name = name
	}
	p.done.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			metrics.Read(s)
			for i := range s {
				if v := s[i].Value.Uint64(); v > p.peak[i] {
					p.peak[i] = v
					if i == 0 && path != "" {
						writeHeapProfile(path)
					}
				}
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	})
	return p
}

// end stops the sampler and returns the peaks: live heap and stacks in MB, goroutines.
func (p *peakSampler) end() (liveMB, stacksMB float64, goroutines int) {
	close(p.stop)
	p.done.Wait()
	return float64(p.peak[0]) / (1 << 20), float64(p.peak[1]) / (1 << 20), int(p.peak[2])
}

func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	_ = pprof.Lookup("heap").WriteTo(f, 0)
	_ = f.Close()
}
