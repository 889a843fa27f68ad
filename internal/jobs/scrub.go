package jobs

import "scheduler"

// scrub passes the text a run's outcome carries through Options.Scrub, so that a secret a job
// printed (one read from the daemon's files, say) is not stored where status and history show it.
func (r *Runner) scrub(c *scheduler.Completion) {
	if r.opts.Scrub == nil {
		return
	}
	c.Output = r.opts.Scrub(c.Output)
	c.Error = r.opts.Scrub(c.Error)
}
