package fence

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"scheduler"
)

// TestSQLite_FencedStatementsLeaveTheWriterAsItWas: a sql job's text runs on the SQLite store's
// one writer connection, inside the fenced transaction. What would outlast that transaction on
// the connection (a pragma, an attached database, a temporary trigger or table) or reach past
// the fence (a write to the store's own tables, a trigger, a change of their schema) is refused,
// also after the text ended the transaction itself; afterwards the fence still refuses a stale
// token, a raise still takes, and writes still commit. The job's own tables stay the text's.
func TestSQLite_FencedStatementsLeaveTheWriterAsItWas(t *testing.T) {
	s := mustOpen(t, Config{Path: filepath.Join(t.TempDir(), "scheduler.db")})
	ctx := testCtx(t)
	const ignore = `CREATE TEMP TRIGGER ig BEFORE UPDATE ON job_fence BEGIN SELECT RAISE(IGNORE); END`
	token := int64(50)
	if err := s.RaiseAll(ctx, []string{"job"}, token); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, text string }{
		{"TempTriggerOnTheFence", ignore},
		{"TempTriggerAfterCommit", `COMMIT; ` + ignore + `; BEGIN`},
		{"QueryOnly", `PRAGMA query_only = 1`},
		{"QueryOnlyAfterCommit", `COMMIT; PRAGMA query_only = 1; BEGIN`},
		{"ForeignKeysOff", `PRAGMA foreign_keys = 0`},
		{"Attach", `COMMIT; ATTACH DATABASE ':memory:' AS other; BEGIN`},
		{"TempTable", `CREATE TEMP TABLE job_fence (job TEXT, token INTEGER)`},
		{"LowerTheFence", `UPDATE job_fence SET token = 1`},
		{"DeleteTheFence", `DELETE FROM job_fence`},
		{"InsertAFence", `INSERT INTO job_fence (job, token, raised_at) VALUES ('other', 9000000000, 0)`},
		{"DeleteRuns", `DELETE FROM runs`},
		{"DeleteOutbox", `DELETE FROM outbox`},
		{"Identity", `DELETE FROM store_identity`},
		{"TriggerOnItsTable", `CREATE TRIGGER t AFTER INSERT ON stock_scans BEGIN DELETE FROM runs; END`},
		{"DropTheFence", `DROP TABLE job_fence`},
		{"RenameRuns", `ALTER TABLE runs RENAME TO r2`},
		{"IndexOnTheFence", `CREATE INDEX i ON job_fence (token)`},
		{"Schema", `UPDATE sqlite_master SET sql = '' WHERE name = 'runs'`},
		{"RunIDs", `DELETE FROM sqlite_sequence`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.FencedStatements(ctx, "job", token, "", tc.text); err == nil {
				t.Fatalf("the text %q succeeded", tc.text)
			}
			var objects, dbs int
			if err := s.Fenced(ctx, "reader", 1, func(_ context.Context, tx scheduler.Tx) error {
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM temp.sqlite_master`).Scan(&objects); err != nil {
					return err
				}
				return tx.QueryRow(ctx, `SELECT count(*) FROM pragma_database_list`).Scan(&dbs)
			}); err != nil {
				t.Fatalf("a write after the text: %v", err)
			}
			if objects != 0 || dbs != 2 {
				t.Fatalf("after the text: %d temporary objects, %d databases; want none, main and temp", objects, dbs)
			}
			token++
			if _, err := s.FencedStatements(ctx, "job", token, "", `INSERT INTO stock_scans (sku, quantity) VALUES ('x', 1)`); err != nil {
				t.Fatalf("a write with the next token: %v", err)
			}
			_, err := s.FencedStatements(ctx, "job", token-1, "", `INSERT INTO stock_scans (sku, quantity) VALUES ('stale', 1)`)
			var fe *scheduler.FenceError
			if !errors.As(err, &fe) || fe.Fence != token {
				t.Fatalf("a stale token after the text: %v, want refused by the fence at %d", err, token)
			}
		})
	}
	if _, err := s.FencedStatements(ctx, "job", token, "", `CREATE TABLE IF NOT EXISTS mine (id INTEGER PRIMARY KEY AUTOINCREMENT, a INTEGER);
		INSERT INTO mine (a) VALUES (1); CREATE INDEX IF NOT EXISTS mine_a ON mine (a); SELECT count(*) FROM runs; DELETE FROM mine`); err != nil {
		t.Fatalf("a text on the job's own table: %v", err)
	}
}
