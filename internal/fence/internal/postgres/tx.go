package postgres

import (
	"context"

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

// WrapTx returns tx, a transaction of the backend's pool, as a
// scheduler.Tx, for a test that holds a fence open the way a script does.
func WrapTx(tx pgx.Tx) scheduler.Tx { return pgTx{tx} }
