package main

import (
	"scheduler/cmd/scheduler/internal/config"
	"scheduler/internal/retention"
)

// policy is the configured job's retention; false for a job not in the table.
func (d *daemon) policy(job string) (retention.Policy, bool) {
	table, _ := d.table()
	for _, j := range table {
		if j.Name == job {
			return jobPolicy(j), true
		}
	}
	return retention.Policy{}, false
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
			ps = append(ps, jobPolicy(j))
		}
	}
	return ps
}

// jobPolicy is j's retention.
func jobPolicy(j config.Job) retention.Policy {
	return retention.Policy{Job: j.Name, MaxAge: j.History.MaxAge, MaxRuns: j.History.MaxRuns, Catchup: j.Catchup}
}
