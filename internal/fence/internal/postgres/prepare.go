package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// prepareWrites prepares the statements of the fence and of the ledger's writes on a new
// connection, each named by its text, which pgx then uses for a query or a batch of that text.
//
// Without it the first use of a statement on a connection costs a round trip of its own (pgx
// describes a statement before it sends it), so a fenced write on a fresh connection took two
// round trips, and a leader that stepped down in between had its write cancelled after the
// first: a slow link then decided whether a stale write reached the fence at all. Statements
// that cannot be prepared yet (the store before `scheduler migrate`) are left to pgx's own
// cache, as before.
func prepareWrites(ctx context.Context, conn *pgx.Conn, q pgStatements) {
	for _, sql := range []string{
		q.lockShared, q.gate, q.checkAll, q.raise, q.fences,
		q.claim, q.claimAhead, q.record, q.slotRows, q.reclaim, q.complete, q.start, q.runRows, q.nextAttempt,
	} {
		if _, err := conn.Prepare(ctx, sql, sql); err != nil && ctx.Err() != nil {
			return
		}
	}
}
