package kinds

import (
	"scheduler"

	"scheduler/internal/runlog"
)

// The daemon's live output is where kinds find its scrub.
var _ liveScrubber = (*runlog.Book)(nil)

// liveScrubber is what an attempt's live output may also offer (runlog.Book does): the scrub of
// the daemon's configured secrets that it applies to what it keeps, the one the runner applies
// to a run's outcome before storing it.
type liveScrubber interface {
	Scrub(string) string
}

// outputScrub returns the scrub of the daemon's secrets for run's output, from its live output;
// nil when that offers none. A kind that cuts its output to an excerpt scrubs the output with it
// before the cut: the runner's scrub of the excerpt alone would miss a secret the cut split.
func outputScrub(run scheduler.Attempt) func(string) string {
	if s, ok := run.Live.(liveScrubber); ok {
		return s.Scrub
	}
	return nil
}
