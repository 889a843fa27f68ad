package jobs

import (
	"scheduler"

	"scheduler/internal/jobs/internal/notices"
)

// notifyFinished attaches the notice of spec's run lr, whose outcome is c, to c: the store queues
// it in the outbox with the outcome, in its fenced write, so a refused outcome notifies no one.
func (t *tenure) notifyFinished(spec *Spec, lr *scheduler.Run, c *scheduler.Completion, attempt int) {
	if spec.Notify != nil && c.Status != scheduler.StatusSucceeded {
		c.Notice = spec.Notify(t.notices().Run(*c, lr.Key(), attempt))
	}
}

// notices makes the notices of the term's outcomes.
func (t *tenure) notices() notices.Term { return notices.Term{Token: t.token, Node: t.r.opts.Node} }
