package jobs

import "scheduler"

// scrub passes the text a run's outcome carries through Options.Scrub: a job that printed a
// secret it should never have seen (one read from the daemon's files, say) does not get it
// stored in the ledger, which status and history show to anyone who may read them.
func (r *Runner) scrub(c *scheduler.Completion) {
	if r.opts.Scrub == nil {
		return
	}
	c.Output = r.opts.Scrub(c.Output)
	c.Error = r.opts.Scrub(c.Error)
}
