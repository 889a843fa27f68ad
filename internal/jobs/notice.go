package jobs

import "scheduler"

// notifyFinished attaches the notice of spec's run lr, whose outcome is c, to c: the store queues
// it in the outbox with the outcome, in its fenced write, so a refused outcome notifies no one.
func (t *tenure) notifyFinished(spec *Spec, lr *scheduler.Run, c *scheduler.Completion, attempt int) {
	if spec.Notify != nil && c.Status != scheduler.StatusSucceeded {
		c.Notice = spec.Notify(t.noticeRun(*c, lr.Key(), attempt))
	}
}

// notifyCaughtUp attaches the notices of spec's missed slots and closed orphans, in place.
func (t *tenure) notifyCaughtUp(spec *Spec, missed []scheduler.Outcome, closes []scheduler.Completion, orphans []scheduler.Run) {
	if spec.Notify == nil {
		return
	}
	for i, o := range missed {
		missed[i].Notice = spec.Notify(t.noticeRun(scheduler.Completion{Job: o.Slot.Job, Status: o.Status, Reason: o.Reason}, o.Slot, 0))
	}
	for i, c := range closes {
		for _, o := range orphans {
			if o.RunID == c.RunID {
				closes[i].Notice = spec.Notify(t.noticeRun(c, o.Key(), c.Attempt))
			}
		}
	}
}

// noticeRun is what a notice reports of the outcome c of slot: the attempt, and the token and
// node of this term, which writes it.
func (t *tenure) noticeRun(c scheduler.Completion, slot scheduler.SlotKey, attempt int) scheduler.Run {
	return scheduler.Run{RunID: c.RunID, Job: c.Job, ScheduledAt: slot.At, Manual: slot.Manual, Status: c.Status,
		Token: t.token, Node: t.r.opts.Node, Attempt: attempt, Error: c.Error, Output: c.Output, Reason: c.Reason}
}
