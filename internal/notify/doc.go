// Package notify makes a job's failure notifications: for the final outcome of a slot that
// ended in one of the events a job's Policy names, the e-mails and the webhook to queue in the
// outbox, as a scheduler.Notice. The store queues a notice in the same fenced write as the
// outcome it reports, so a stale leader's outcome, refused, notifies no one, and a committed one
// always has its notice queued; the outbox's dispatcher delivers it.
//
// # Once per slot
//
// A message's key is derived from the job, the slot, the event and the destination, never from
// the term or the attempt: a redo of the slot after a failover, or a repeat of a write whose
// reply was lost, finds the key taken and queues nothing new. The key is the e-mail's Message-ID
// and the webhook's Idempotency-Key, by which a receiver drops a repeated delivery.
//
// # The events
//
//   - failed: the slot's run failed, after its retries (the slot's final outcome only); also a
//     run a later leader closed failed because its outcome was never recorded.
//   - fenced: the run's outcome was recorded fenced: its receiver refused its token (an http
//     job's 409). A run whose own writes the store refused belongs to a term that is over: its
//     outcome is refused too, so it notifies no one, and the next leader takes the slot over; the
//     outcome that leader records is the one notified.
//   - missed: a new leader recorded the slot missed at catch-up (no leader at its time), or
//     closed a run left running by an older leader as missed.
//   - dead: one of the job's own outbox messages of the slot went dead (its deliveries failed
//     for good); a notification that goes dead notifies no one, so notices cannot loop.
//
// With After N, only the N-th consecutive failure of the job notifies, counted in slot order over
// its failed, fenced and missed runs since its last success; then nothing until a success resets
// the count.
package notify
