package fence

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestDBTime: one time column type reads both stores' times, in UTC, and
// refuses a value that is neither.
func TestDBTime(t *testing.T) {
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
			d := dbTime{t: time.Unix(1, 0), valid: true}
			if err := d.Scan(tc.src); err != nil {
				t.Fatalf("Scan(%v): %v", tc.src, err)
			}
			if !d.t.Equal(tc.want) || d.valid != tc.valid || d.t.Location() != time.UTC {
				t.Fatalf("Scan(%v) = %v (valid %v), want %v (valid %v) in UTC", tc.src, d.t, d.valid, tc.want, tc.valid)
			}
			if p := d.ptr(); (p != nil) != tc.valid {
				t.Fatalf("ptr() = %v, want nil only for NULL", p)
			}
		})
	}
	t.Run("Timestamptz", func(t *testing.T) {
		var d dbTime
		if err := d.ScanTimestamptz(pgtype.Timestamptz{Time: at.In(zone), Valid: true}); err != nil || !d.valid || !d.t.Equal(at) || d.t.Location() != time.UTC {
			t.Fatalf("ScanTimestamptz = %v (valid %v, err %v), want %v in UTC", d.t, d.valid, err, at)
		}
		if err := d.ScanTimestamptz(pgtype.Timestamptz{}); err != nil || d.valid || d.ptr() != nil {
			t.Fatalf("ScanTimestamptz(NULL) = %v (valid %v, err %v), want invalid", d.t, d.valid, err)
		}
	})
	t.Run("OtherTypeRefused", func(t *testing.T) {
		var d dbTime
		if err := d.Scan("2026-03-01"); err == nil {
			t.Fatalf("Scan of a string = %v, want an error", d.t)
		}
	})
}

// TestCollectSQL reads every row with its scan, and on a scan error returns
// it and closes the rows, so that the connection serves the next query.
func TestCollectSQL(t *testing.T) {
	ctx := testCtx(t)
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "rows.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	db.SetMaxOpenConns(1)
	scanInt := func(row rowScanner) (n int, err error) { return n, row.Scan(&n) }
	query := `SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3`
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := collectSQL(rows, scanInt); err != nil || len(got) != 3 || got[2] != 3 {
		t.Fatalf("collectSQL = %v (err %v), want [1 2 3]", got, err)
	}
	errBad := errors.New("bad row")
	if rows, err = db.QueryContext(ctx, query); err != nil {
		t.Fatal(err)
	}
	got, err := collectSQL(rows, func(row rowScanner) (int, error) {
		n, err := scanInt(row)
		if n == 2 {
			return 0, errBad
		}
		return n, err
	})
	if !errors.Is(err, errBad) || got != nil {
		t.Fatalf("collectSQL with a failing scan = %v, %v; want nil, %v", got, err, errBad)
	}
	var one int
	if err := db.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		t.Fatalf("query after the failed scan: %v (were the rows left open?)", err)
	}
}
