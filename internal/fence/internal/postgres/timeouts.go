package postgres

import (
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// setTimeouts bounds a transaction's waits for locks by lock_timeout (the first parameter, in
// milliseconds), and keeps a statement_timeout that the database or the role sets (ALTER
// DATABASE ... SET statement_timeout) from ending the transaction's statements before that:
// where it is shorter it is raised to the second parameter, for the transaction alone; where it
// is longer, or none, it stays.
// A fence held by another session must end a raise or a write by lock_timeout, which the
// runner reads as held (verdict.ErrRaiseTimeout) and holds back that job alone; a
// statement_timeout first would read as a failed write, and at a takeover end the term.
const setTimeouts = `SELECT pg_catalog.set_config('lock_timeout', $1, true),
	pg_catalog.set_config('statement_timeout', (CASE WHEN s.ms = 0 OR s.ms >= $2 THEN s.ms ELSE $2 END)::text, true)
	FROM (SELECT setting::bigint AS ms FROM pg_catalog.pg_settings WHERE name = 'statement_timeout') AS s`

// queueTimeouts queues setTimeouts on b for a transaction that waits at most lock for each lock;
// its statements may take twice that and some more before a statement_timeout ends them.
func queueTimeouts(b *pgx.Batch, lock time.Duration) {
	statement := 2*lock + 5*time.Second
	b.Queue(setTimeouts, strconv.FormatInt(lock.Milliseconds(), 10), statement.Milliseconds())
}
