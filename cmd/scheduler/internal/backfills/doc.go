// Package backfills is `scheduler backfill` on both of its sides: the command's checks of a
// request (its range parsed in the job's zone, its slots counted, its overlap) and its watch of
// the request's progress, and the leader's work through the requests in the control state
// (Serve), which hands each to package backfill and records its progress. The package lives
// under the command, which wires it to the control state, the runner and the store.
package backfills
