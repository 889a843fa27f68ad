package retention

import "time"

// MinProtect is the shortest window of recent slots whose runs a Pruner keeps, whatever the
// job's catch-up window: a trigger request is handed to the runner for a while after its time
// (while no replica leads, while its job is blocked), and the run it made must outlast that, or
// the request handed again would find no run and run its slot a second time. Requests older
// than the window are dropped (see Policy.Prunes).
const MinProtect = time.Hour

// Protected is how far back from now a Pruner keeps every run of the job: its catch-up window,
// which a new leader compares with the slots it computes, and at least MinProtect.
func (p Policy) Protected() time.Duration { return max(p.Catchup, MinProtect) }

// Prunes reports whether a Pruner may delete a finished run whose slot is age old: outside the
// protected window, and older than MaxAge or, with MaxRuns set, behind MaxRuns newer runs.
func (p Policy) Prunes(age time.Duration) bool {
	return age > p.Protected() && (p.MaxAge > 0 && age > p.MaxAge || p.MaxRuns > 0)
}
