package scheduler

import "time"

// Retention says which finished runs of one job a prune of the ledger may delete. A run is
// deleted when it is older than Before or, a scheduled run not backfilled, beyond the newest
// Keep such finished runs; and only if it is finished, its slot is before Protect and it is not
// the job's last run (the newest by slot).
type Retention struct {
	// Job is the job whose runs are pruned.
	Job string
	// Before deletes finished runs whose slot is earlier. Zero: no age limit.
	Before time.Time
	// Keep keeps the newest Keep finished scheduled runs and deletes older
	// scheduled ones. Manual runs (a trigger's) and backfilled ones are left
	// to Before: a trigger request handed again (its key written twice, an
	// etcd snapshot restored), or a backfill a new leader carries on, then
	// finds its runs within the age limit instead of running their slots
	// again. Zero: no count limit.
	Keep int
	// Protect keeps every run whose slot is at or after it: a new leader
	// compares the slots of its catch-up window with the ledger, and a
	// slot whose row was pruned would be run again.
	Protect time.Time
	// Limit bounds the rows one call deletes, so that one call holds the
	// job's fence and the table's locks briefly. It must be positive.
	Limit int
}
