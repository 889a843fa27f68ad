package kinds

import (
	"scheduler"

	"scheduler/internal/runlog"
)

// The daemon's live output is where kinds find its scrub.
var _ runlog.Redactor = (*runlog.Book)(nil)

// outputScrub returns the scrub of the daemon's secrets for run's output, from its live output
// (runlog.Book offers it: the one the runner applies to a run's outcome before storing it); nil
// when that offers none. A kind that cuts its output to an excerpt scrubs the output with it
// before the cut: the runner's scrub of the excerpt alone would miss a secret the cut split.
func outputScrub(run scheduler.Attempt) runlog.Redactor {
	if r, ok := run.Live.(runlog.Redactor); ok {
		return r
	}
	return nil
}
