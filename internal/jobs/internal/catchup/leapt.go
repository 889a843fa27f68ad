package catchup

import (
	"time"

	"scheduler"
)

// LateLimit is how late a job's next slot may be due when its last one fired before the slots
// between are taken for ones the wall clock leapt over: a live leader's loop is never that late
// (a leader frozen that long has lost its term), but a step of its clock (NTP, date -s) makes
// every slot of the step due at once.
const LateLimit = time.Minute

// Leapt decides the slots of job after slot, the one that just fired, that are due more than
// LateLimit before now, as a new leader's catch-up decides the slots of an outage: by the
// job's misfire policy and catch-up window, not by running each in turn. false when the next
// slot is not that late, or when the job runs them all anyway (misfire all).
func Leapt(job Job, slot, now time.Time) (Plan, bool) {
	next := job.Schedule.Next(slot)
	if job.Misfire == MisfireAll || next.At.IsZero() || !job.fireAt(next.At).Before(now.Add(-LateLimit)) {
		return Plan{}, false
	}
	last := scheduler.Run{Job: job.Name, ScheduledAt: slot, Status: scheduler.StatusRunning}
	plan, err := Decide(job, now, []scheduler.Run{last}, nil, &last)
	return plan, err == nil
}
