package main

import (
	"time"

	"scheduler/internal/retention"
)

// maxAge is the configured job's history.max_age; 0 for a job not in the table.
func (d *daemon) maxAge(job string) time.Duration {
	table, _ := d.table()
	for _, j := range table {
		if j.Name == job {
			return j.History.MaxAge
		}
	}
	return 0
}

// retention returns the retention of every configured job not blocked, for the pruner's next
// pass.
func (d *daemon) retention() []retention.Policy {
	table, _ := d.table()
	// A blocked job's fence refuses the term's writes, its deletes too: pruning it would end
	// pruning for every job.
	blocked := map[string]bool{}
	for _, b := range d.runner.Blocked() {
		blocked[b.Job] = true
	}
	ps := make([]retention.Policy, 0, len(table))
	for _, j := range table {
		if !blocked[j.Name] {
			ps = append(ps, retention.Policy{Job: j.Name, MaxAge: j.History.MaxAge, MaxRuns: j.History.MaxRuns, Catchup: j.Catchup})
		}
	}
	return ps
}
