// Package backfill carries out a backfill request: a job's scheduled slots in a past range,
// each run once, in slot order, through the leader's runner, so that every slot is claimed,
// fenced and recorded like a fired one, and marked with the request's id in the run ledger.
//
// The ledger is the request's memory. A slot whose run carries the request's id was handled by
// the request, by this leader or an earlier one, and is not run again; a run of the request left
// running by a leader that died is taken over by the next as its next attempt. So a leader that
// takes over a request half done carries on where the ledger says it stopped, and a request
// handed out twice still runs each slot once.
//
// Run follows each slot in the ledger until it is decided: it polls the ledger rather than
// listening to the runner, so that nothing it waits for can be lost between a term's end and the
// next. It does not own the request's record in the control state: its caller stores the
// progress it reports and removes the request when Run returns without error.
package backfill
