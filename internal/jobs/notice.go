package jobs

import (
	"scheduler"
)

// A job's failure notifications (Spec.Notify) ride on the write of its slot's final outcome: the
// notice is attached to the completion or the record, and the store queues it in the outbox in
// the same fenced transaction. A stale term's write is refused with its notice; a committed
// outcome has queued its notice; a slot's notice is queued once (its keys are the slot's).

// noticeRun is what a notice reports of a run's outcome c: its slot, the attempt, and this term's
// token and node, which write it.
func (t *tenure) noticeRun(c scheduler.Completion, slot scheduler.SlotKey, attempt int) scheduler.Run {
	return scheduler.Run{RunID: c.RunID, Job: c.Job, ScheduledAt: slot.At, Manual: slot.Manual, Status: c.Status,
		Token: t.token, Node: t.r.opts.Node, Attempt: attempt, Error: c.Error, Output: c.Output, Reason: c.Reason}
}

// notifyFinished attaches the notice of spec's run lr, whose outcome is c, to c.
func (t *tenure) notifyFinished(spec *Spec, lr *scheduler.Run, c *scheduler.Completion, attempt int) {
	if spec.Notify == nil || c.Status == scheduler.StatusSucceeded {
		return
	}
	c.Notice = spec.Notify(t.noticeRun(*c, lr.Key(), attempt))
}

// notifyCaughtUp attaches the notices of spec's slots that catch-up records missed and of the
// orphans it closes (closes, orphans of spec's job among orphans), in place.
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
				break
			}
		}
	}
}
