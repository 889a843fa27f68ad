// Package runlog keeps the output of the runs in progress on this replica, so that an operator
// can follow a run while it runs (`scheduler logs -f`), and serves it over HTTP from the
// leader's status server at GET /runs/{id}/output.
//
// The ledger keeps a run's output excerpt only once the run is finished; while it runs, its
// output exists only in the leader's memory, here. A Book keeps the newest MaxKept bytes of
// each run (older bytes are dropped, and a follower is told how many it missed), MinKept once
// all runs together hold MaxTotal, and forgets a run Linger after its last attempt ended, so its
// memory stays bounded whatever the runs print. Only the leader runs jobs, so only the leader's Book has anything to serve; a
// follower's answers 404, as does the leader's for a run it does not run.
//
// # The stream
//
// GET /runs/{id}/output?from=N answers 200 with the run's output from byte offset N (default
// 0) as text, flushed as the run prints it, and ends when the run's attempt ends. The
// Output-Offset header is the offset of the first byte sent: above N when the bytes from N were
// no longer kept. A follower that reconnects (between two attempts, or after a failover) asks
// from the offset it reached.
package runlog
