// Package datadir guards a replica's data directory, where the embedded etcd and the SQLite
// store live: one daemon at a time holds it, and a second one fails at once, naming the holder,
// instead of waiting on the embedded etcd's own lock; and the files created in it are private.
package datadir
