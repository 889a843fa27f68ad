package fence

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"

	"scheduler"
)

// pgTx adapts a pgx transaction to Tx.
type pgTx struct{ tx pgx.Tx }

func (t pgTx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, sql, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (t pgTx) Query(ctx context.Context, sql string, args ...any) (scheduler.Rows, error) {
	rows, err := t.tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgRows{rows}, nil
}

func (t pgTx) QueryRow(ctx context.Context, sql string, args ...any) scheduler.Row {
	return t.tx.QueryRow(ctx, sql, args...)
}

func (pgTx) Dialect() scheduler.Dialect { return scheduler.Postgres }

// pgRows adapts pgx.Rows, whose Close reports nothing, to Rows.
type pgRows struct{ rows pgx.Rows }

func (r pgRows) Next() bool             { return r.rows.Next() }
func (r pgRows) Scan(dest ...any) error { return r.rows.Scan(dest...) }
func (r pgRows) Err() error             { return r.rows.Err() }

func (r pgRows) Close() error {
	r.rows.Close()
	return r.rows.Err()
}

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
