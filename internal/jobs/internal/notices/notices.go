// Package notices makes the notices a job's outcomes queue in the outbox, from the job's Notify:
// what each reports of the outcome, and which slots of a takeover's catch-up have one.
package notices

import "scheduler"

// Term is the leadership term that writes the outcomes: its token and node, which a notice
// reports.
type Term struct {
	Token int64
	Node  string
}

// Run is what a notice reports of the outcome c of slot: the attempt, and the term that writes it.
func (t Term) Run(c scheduler.Completion, slot scheduler.SlotKey, attempt int) scheduler.Run {
	return scheduler.Run{RunID: c.RunID, Job: c.Job, ScheduledAt: slot.At, Manual: slot.Manual, Status: c.Status,
		Token: t.Token, Node: t.Node, Attempt: attempt, Error: c.Error, Output: c.Output, Reason: c.Reason}
}

// CaughtUp attaches, in place, notify's notices of a takeover's missed slots and of the orphans
// it closes; orphans are the runs closes finish. notify nil: none.
func (t Term) CaughtUp(notify func(scheduler.Run) *scheduler.Notice, missed []scheduler.Outcome, closes []scheduler.Completion, orphans []scheduler.Run) {
	if notify == nil {
		return
	}
	for i, o := range missed {
		missed[i].Notice = notify(t.Run(scheduler.Completion{Job: o.Slot.Job, Status: o.Status, Reason: o.Reason}, o.Slot, 0))
	}
	for i, c := range closes {
		for _, o := range orphans {
			if o.RunID == c.RunID {
				closes[i].Notice = notify(t.Run(c, o.Key(), c.Attempt))
			}
		}
	}
}
