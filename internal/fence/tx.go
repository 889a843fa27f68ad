package fence

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
)

// Dialect names the SQL dialect of a store, for jobs whose statements differ
// between Postgres and SQLite.
type Dialect string

// The dialects of the two backends.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// Tx is the transaction a fenced function writes through, the same on both
// backends. Placeholders are $1..$n on both (SQLite binds $N to the N-th
// argument). A missing row is reported as sql.ErrNoRows on both. The Tx is
// valid only until the function returns.
type Tx interface {
	// Exec runs a statement and returns the number of rows it affected.
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	// Query runs a statement that returns rows; the caller closes them.
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	// QueryRow runs a statement expected to return at most one row.
	QueryRow(ctx context.Context, sql string, args ...any) Row
	// Dialect reports which SQL the statements must be written in.
	Dialect() Dialect
}

// Rows is the result of Tx.Query.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Row is the result of Tx.QueryRow.
type Row interface {
	Scan(dest ...any) error
}

// pgTx adapts a pgx transaction to Tx.
type pgTx struct{ tx pgx.Tx }

func (t pgTx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, sql, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (t pgTx) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	rows, err := t.tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgRows{rows}, nil
}

func (t pgTx) QueryRow(ctx context.Context, sql string, args ...any) Row {
	return t.tx.QueryRow(ctx, sql, args...)
}

func (pgTx) Dialect() Dialect { return Postgres }

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

func (t sqlTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	return t.tx.QueryContext(ctx, query, args...)
}

func (t sqlTx) QueryRow(ctx context.Context, query string, args ...any) Row {
	return t.tx.QueryRowContext(ctx, query, args...)
}

func (sqlTx) Dialect() Dialect { return SQLite }
