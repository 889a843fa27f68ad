package scheduler

import "time"

// BackfillSlot is a scheduled slot of a past range that a backfill request runs: it is claimed,
// fenced and recorded like a fired slot, and its run is marked with the request's id. The ledger
// keeps one run per slot, so the slot's earlier run, if any, becomes the backfill's: its attempt
// rises and its outcome is replaced. A slot whose run succeeded is left alone unless Rerun.
type BackfillSlot struct {
	Job string
	// At is the slot, a time of the job's schedule.
	At time.Time
	// ID names the backfill request (> 0); a slot whose run carries it already was handled by
	// the request and is not run again.
	ID int64
	// Rerun runs a slot whose run succeeded again, as the next attempt of the same run.
	Rerun bool
}
