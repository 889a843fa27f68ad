// Package outbox delivers the messages that jobs queue in the store's
// outbox: e-mails over SMTP, webhooks over HTTP, and log lines for
// development. A Dispatcher runs while its replica leads, for one term at a
// time (Run(ctx, token)).
//
// # Why an outbox
//
// A job that sends an e-mail itself sends it outside the fence: a leader
// frozen in the middle of a run wakes up and sends again, although its
// results are refused. A job therefore only writes rows, its results and
// the messages to send, in one fenced transaction, and the dispatcher
// delivers what committed. A message of a transaction that was fenced out
// never exists; a redo of a slot queues nothing twice (the message's key is
// unique).
//
// # One dispatcher, fenced
//
// Run claims due messages in batches before it sends any of them: the
// claim marks each message sending and counts the attempt, in a write
// fenced with the term's token (on the store's dispatcher fence). The first
// claim of a new term raises that fence, waits for the older term's claims
// and records in flight, and takes over the messages the older term left
// sending. From then on the older term's claims and records are refused,
// so a stale leader cannot start a delivery after the new leader raised the
// fence. Results are recorded in a fenced write as well: delivered; pending
// again with an exponential backoff, jittered, up to a maximum; or dead,
// with the last error, after the last attempt or a permanent failure (an
// SMTP 5xx reply, a webhook's 4xx other than 408 and 429, an invalid
// destination).
//
// # The guarantee, stated honestly
//
// Every committed message is delivered at least once, as long as some
// leader runs a dispatcher and the receiver eventually accepts it. An
// outcome the store could not record (it restarted, say) is kept and
// recorded when the store is back, within the term; the message is not
// sent again meanwhile. It is
// delivered twice only when a dispatcher stops (crash, freeze, lost
// leadership, a shutdown whose grace (Drain) ran out) after the receiver
// accepted the message and before the fenced record of that acceptance
// committed: the next term then finds the
// message sending under an older token and sends it again. The same
// happens when a dispatcher claimed a message and then froze past its
// leadership before sending it; Run narrows that case by not starting a
// send whose claim is older than Config.ClaimTTL by its own clock, but a
// process can freeze between that check and the send. The receiver can
// drop the repeat by the message's key: it is the e-mail's Message-ID and
// the webhook's Idempotency-Key, and a webhook also carries the term's
// Fencing-Token, so a receiver that keeps the highest token seen per key
// can refuse an older term's late repeat.
//
// # What a receiver and a job can do
//
// Destinations come from jobs, which are not trusted: an e-mail goes to one
// address, parsed and without header injection (the key is restricted to a
// safe alphabet before it becomes a Message-ID); a webhook goes by POST to
// an http or https URL, to the hosts of WebhookConfig.Hosts when that is set,
// without following redirects, with a bounded time and a bounded read of
// the response. An SMTP session ends with its send (Config.SendTimeout or
// the term): its connection is closed then, whatever the server does, and
// with STARTTLS required a server that does not offer it gets nothing. A
// session reads at most 1 MiB of the server's replies, so a server that
// never ends a reply cannot fill the daemon's memory. A message the server
// accepted (its reply to the end of DATA) is delivered, whatever the server
// does with the rest of the session (the RSET or QUIT after it). A receiver
// that hangs or fails holds up no other destination: the claimed messages wait
// in one lane per destination for a share of Config.Concurrency (lanes.go).
package outbox
