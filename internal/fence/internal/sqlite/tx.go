package sqlite

import (
	"context"
	"database/sql"

	"scheduler"
)

// sqlTx adapts a database/sql transaction to Tx.
type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t sqlTx) Query(ctx context.Context, query string, args ...any) (scheduler.Rows, error) {
	return t.tx.QueryContext(ctx, query, args...)
}

func (t sqlTx) QueryRow(ctx context.Context, query string, args ...any) scheduler.Row {
	return t.tx.QueryRowContext(ctx, query, args...)
}

func (sqlTx) Dialect() scheduler.Dialect { return scheduler.SQLite }
