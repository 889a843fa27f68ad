// Package tables is what the store's two backends share of its tables: the
// columns of a run and of an outbox message and how either driver scans
// them (a Postgres timestamptz and SQLite's Unix microseconds read into one
// Time), the statements written once for both dialects (the outbox's and
// the retention's, with a placeholder for the schema prefix), and the form
// in which values are stored (times in UTC to the microsecond, text as
// valid UTF-8 without NUL).
//
// It holds no state and opens nothing; the fence's correctness argument,
// and what each statement guarantees as part of a fenced transaction, are
// in package fence.
package tables
