// Package lease is the leadership machinery the lease-style coordinator
// backends share (a Postgres lease row, a Redis lock, a ZooKeeper session):
// holding a term while its lease is renewed, stepping down on the holder's
// own monotonic clock before the server could hand the lease to anyone else,
// and the campaign loop's retry backoff. Each backend keeps only what is
// specific to its server: how a lease is granted, renewed, released and
// observed.
//
// It is a leaf: it imports only the scheduler's root package and the
// standard library. It logs nothing itself; the hooks of Renewal and Rounds
// let a backend log with its own words and fields.
//
// # What it guarantees, and what it does not
//
// A term's context is cancelled a margin before the lease could expire on
// the server, when no renewal was answered in time. That bounds how long a
// leader acts on a lease it may have lost, assuming the two clocks run at
// about the same rate; it does not make the leader a single actor (a paused
// process wakes up past its deadline). The store's fence, which refuses
// writes with a token older than the newest it has seen, is what keeps a
// second holder's writes out.
package lease
