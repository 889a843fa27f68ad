// Package redislock elects the scheduler's leader with a Redis lock. It is
// an efficiency lock made safe by the fence: it keeps replicas from doing
// the same work twice almost always, and the store's fence refuses the
// writes of the rare second holder.
//
// A Campaigner takes the lock with SET key value NX PX ttl inside a script
// that, in the same atomic step, takes the term's token from a counter
// (key + ":token"): one above the larger of the counter and a floor the
// caller supplies (Config.Floor, the store's highest fence). It renews the
// lock every TTL/3 and releases it when lead returns, both with
// compare-and-set scripts on the term's unique value, so a term never
// extends or deletes a later term's lock. Grants and releases are
// published on key + ":events"; followers subscribe, so a resigning leader
// (SIGTERM) is replaced at once, and try again when the lock they saw would
// expire, or at the latest every Config.Poll, so a crashed or frozen leader
// is replaced within about the TTL without a message.
//
// Anyone who can write to Redis can write the two keys. A lock no
// campaigner could have written does not block the election: a value not
// of a campaigner's shape is deleted, a lock without an expiry is given the
// TTL (a campaigner's term renews it; anything else expires), each logged
// with what was found. A counter that holds no token counts as zero, so the
// floor decides. Tokens are counted as decimal strings, exactly, up to the
// largest int64; a counter there stops every campaign, at error level,
// naming the key and the command that sets it back. A lock of a
// campaigner's shape with an expiry, written by hand, cannot be told from a
// term's and is waited for.
//
// # What it guarantees, and what it does not
//
// Redis is not consensus. A failover to a replica that missed the last
// writes, or a restart without persistence, can hand the lock to a second
// holder while the first still believes it leads, and can send the counter
// back so that a new token repeats or falls below an old one. FLUSHALL
// does the same. The lock alone therefore never makes a single actor; the
// fence does: every durable effect of a term goes through the store, which
// refuses a token lower than the newest it has seen. The floor keeps the
// backend from wedging after the counter fell back: the next token taken
// is above the store's fence, so a new leader is not refused for ever.
// One window remains: if the counter falls back while a term runs whose
// token the store's fence has not seen yet (between the grant and the new
// leader's first fence raise), the next holder can be granted the same
// token, and the fence cannot tell two holders with one token apart. Run
// Redis with persistence (appendonly, appendfsync always) where that
// matters, or use a consensus backend.
//
// Within one Redis history the leader steps down a margin before its lock
// could expire on the server, counting on its own monotonic clock from
// when its last successful renewal was sent; Redis counts the TTL from when
// it ran the script, which is later. But cancelling a context does not stop
// a process: a leader paused by GC or the operating system can still act
// after its successor took the lock, and the fence refuses it then.
package redislock
