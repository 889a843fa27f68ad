package main

import (
	"scheduler"
)

// deadNotice is the dispatcher's Dead hook: the notice of m's death, by the notify keys of m's
// job in the table the daemon runs now; nil when the job notifies no dead message, or is gone.
func (d *daemon) deadNotice(m scheduler.Message, res scheduler.Delivery) *scheduler.Notice {
	jobs, _ := d.table()
	for _, j := range jobs {
		if j.Name == m.Job {
			return j.Notify.Policy(j.Name).DeadNotice(m, res.Error, m.ClaimToken, d.cfg.Node)
		}
	}
	return nil
}
