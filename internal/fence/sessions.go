package fence

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"scheduler/internal/fence/internal/postgres"
)

// ResetOnReadOnly makes a pool of the store's database drop its sessions when Postgres refuses
// a write as read-only (SQLSTATE 25006), as the store's own pools do: a session keeps the
// defaults it connected with, so a database made writable again (or an address moved from a
// demoted primary) would go on refusing the pool's writes until its sessions aged out. Call the
// function it returns with the pool once the pool is made.
func ResetOnReadOnly(pc *pgxpool.Config) (bind func(*pgxpool.Pool)) {
	return postgres.ResetOnReadOnly(pc)
}
