package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// IdentityPostgres returns the random id that the store_identity migration created in schema, and the name of
// pool's database.
func IdentityPostgres(ctx context.Context, pool *pgxpool.Pool, schema string) (id, database string, err error) {
	q := `SELECT id, current_database() FROM ` + pgx.Identifier{schema, "store_identity"}.Sanitize()
	if err := pool.QueryRow(ctx, q).Scan(&id, &database); err != nil {
		return "", "", fmt.Errorf("read the store's identity: %w", err)
	}
	return id, database, nil
}

// IdentitySQLite returns the random id that the store_identity migration created in db.
func IdentitySQLite(ctx context.Context, db *sql.DB) (string, error) {
	var id string
	if err := db.QueryRowContext(ctx, `SELECT id FROM store_identity`).Scan(&id); err != nil {
		return "", fmt.Errorf("read the store's identity: %w", err)
	}
	return id, nil
}
