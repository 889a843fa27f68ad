package postgres

import (
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// readOnlyCode is SQLSTATE read_only_sql_transaction: a write refused because the session's
// transactions are read-only (default_transaction_read_only, or a server in recovery).
const readOnlyCode = "25006"

// ResetOnReadOnly makes the pool of pc drop its sessions when Postgres refuses a write as
// read-only. A session keeps the defaults it connected with: after a database made read-only
// (ALTER DATABASE ... SET default_transaction_read_only) is made writable again, or after the
// address moves from a demoted primary to the new one, the pool's old sessions would go on
// refusing every write until they aged out, an hour later; new sessions take the database as it
// is now. Call the function it returns with the pool once the pool is made.
func ResetOnReadOnly(pc *pgxpool.Config) (bind func(*pgxpool.Pool)) {
	var pool atomic.Pointer[pgxpool.Pool]
	next := pc.ConnConfig.OnPgError
	pc.ConnConfig.OnPgError = func(c *pgconn.PgConn, e *pgconn.PgError) bool {
		if e.Code == readOnlyCode {
			if p := pool.Load(); p != nil {
				p.Reset() // the idle sessions now, the others once released (no pool lock is held here)
			}
			return false // this session is closed
		}
		if next != nil {
			return next(c, e)
		}
		return !strings.EqualFold(e.Severity, "FATAL")
	}
	return pool.Store
}
