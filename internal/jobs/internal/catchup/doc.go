// Package catchup decides what a new leader owes one job's past slots. Given the job's timing
// and misfire policy, the ledger's runs of its catch-up window, the runs older leaders left
// running (orphans), its newest run and now, Decide returns which slots to run, which to record
// missed, which orphans to close without running, and which orphans belong to slots still to
// come. It is pure: it reads no clock and no store, so the same inputs always give the same plan.
//
// # What a plan guarantees
//
//   - An orphan of the window was started by an older leader, or claimed just before it fired:
//     it is always run again, whatever the misfire policy, so a slot cut off by a failover is
//     never left half done. A manual orphan is always run again too: someone asked for it.
//   - A run that started is never recorded as a slot that did not run: an orphan closed
//     without running is closed failed, saying so, unless it never started (attempt 0).
//   - A job without any run in the ledger is new and owes nothing before now.
//   - The slots to run are in slot order, oldest first; the number of missed slots recorded one
//     by one before the window is bounded, past which the newest is recorded with a note.
package catchup
