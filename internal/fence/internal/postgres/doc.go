// Package postgres is the store's Postgres backend: the fence entered with
// a transaction-level advisory lock and a gate read in a later statement,
// the run ledger's writes as fenced batches of one round trip, the outbox's
// writes and reads, sql jobs' statements on the store's or the jobs' own
// connection, and the migrations, on a pgx pool.
//
// Each method makes one attempt and returns the verdict errors of package
// verdict; fence.Store validates input, retries serialization failures and
// wraps errors. Why the fence orders writes under READ COMMITTED, and the
// three details that argument rests on, is stated in package fence.
package postgres
