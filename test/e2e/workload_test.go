package e2e

import (
	"fmt"
	"time"
)

// invoicesJob is the name of the invoices job in every scenario.
const invoicesJob = "invoices"

// workload is the seed's workload: the invoices builtin billing clients clients, delay apart, in
// one fenced transaction each, one invoice set per slot (period: slot). Overlap queue, so that a
// slot due while a takeover finishes the previous one runs after it instead of being skipped.
type workload struct {
	schedule string
	every    time.Duration // the schedule's period
	clients  int
	delay    time.Duration
	timeout  time.Duration // per attempt; 0 means 1m
	extra    string        // more job keys, each line indented by four spaces
}

// seedWorkload is the workload of the seed's experiment: ten clients half a second apart, a
// slot every ten seconds; a run takes 4.5 s.
var seedWorkload = workload{schedule: "@every 10s", every: 10 * time.Second, clients: 10, delay: 500 * time.Millisecond}

func (w workload) yaml() string {
	timeout := w.timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	return fmt.Sprintf(`  - name: %s
    schedule: %q
    type: builtin
    builtin: invoices
    params: {clients: %d, delay: %s, period: slot}
    overlap: queue
    timeout: %s
%s`, invoicesJob, w.schedule, w.clients, w.delay, timeout, w.extra)
}

// runTime is how long a run takes without faults.
func (w workload) runTime() time.Duration { return time.Duration(w.clients-1) * w.delay }

// nextSlot returns the first slot of the workload after t.
func (w workload) nextSlot(t time.Time) time.Time { return t.UTC().Truncate(w.every).Add(w.every) }
