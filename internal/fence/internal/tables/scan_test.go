package tables

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// TestTime: one time column type reads both stores' times, in UTC, and
// refuses a value that is neither.
func TestTime(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 123000, time.UTC)
	zone := time.FixedZone("east", 3600)
	for _, tc := range []struct {
		name  string
		src   any
		want  time.Time
		valid bool
	}{
		{"SQLiteMicros", at.UnixMicro(), at, true},
		{"Time", at.In(zone), at, true},
		{"Null", nil, time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Time{T: time.Unix(1, 0), Valid: true}
			if err := d.Scan(tc.src); err != nil {
				t.Fatalf("Scan(%v): %v", tc.src, err)
			}
			if !d.T.Equal(tc.want) || d.Valid != tc.valid || d.T.Location() != time.UTC {
				t.Fatalf("Scan(%v) = %v (valid %v), want %v (valid %v) in UTC", tc.src, d.T, d.Valid, tc.want, tc.valid)
			}
			if p := d.Ptr(); (p != nil) != tc.valid {
				t.Fatalf("Ptr() = %v, want nil only for NULL", p)
			}
		})
	}
	t.Run("Timestamptz", func(t *testing.T) {
		var d Time
		if err := d.ScanTimestamptz(pgtype.Timestamptz{Time: at.In(zone), Valid: true}); err != nil || !d.Valid || !d.T.Equal(at) || d.T.Location() != time.UTC {
			t.Fatalf("ScanTimestamptz = %v (valid %v, err %v), want %v in UTC", d.T, d.Valid, err, at)
		}
		if err := d.ScanTimestamptz(pgtype.Timestamptz{}); err != nil || d.Valid || d.Ptr() != nil {
			t.Fatalf("ScanTimestamptz(NULL) = %v (valid %v, err %v), want invalid", d.T, d.Valid, err)
		}
	})
	t.Run("OtherTypeRefused", func(t *testing.T) {
		var d Time
		if err := d.Scan("2026-03-01"); err == nil {
			t.Fatalf("Scan of a string = %v, want an error", d.T)
		}
	})
}

// TestCollectSQL reads every row with its scan, and on a scan error returns
// it and closes the rows, so that the connection serves the next query.
func TestCollectSQL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "rows.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	db.SetMaxOpenConns(1)
	scanInt := func(row RowScanner) (n int, err error) { return n, row.Scan(&n) }
	query := `SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3`
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := CollectSQL(rows, scanInt); err != nil || len(got) != 3 || got[2] != 3 {
		t.Fatalf("CollectSQL = %v (err %v), want [1 2 3]", got, err)
	}
	errBad := errors.New("bad row")
	if rows, err = db.QueryContext(ctx, query); err != nil {
		t.Fatal(err)
	}
	got, err := CollectSQL(rows, func(row RowScanner) (int, error) {
		n, err := scanInt(row)
		if n == 2 {
			return 0, errBad
		}
		return n, err
	})
	if !errors.Is(err, errBad) || got != nil {
		t.Fatalf("CollectSQL with a failing scan = %v, %v; want nil, %v", got, err, errBad)
	}
	var one int
	if err := db.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		t.Fatalf("query after the failed scan: %v (were the rows left open?)", err)
	}
}
