package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	sqlite "modernc.org/sqlite"
)

// The store's own tables: a sql job's text may read them but not change them. The builtin jobs'
// tables (invoices, stock_scans, stock_report) are the jobs' to write. The schema table is not
// listed: creating a table of the job's own writes it, and SQLite refuses a write to it by a
// statement unless a pragma (refused) allows it.
var storeTables = map[string]bool{
	"job_fence": true, "runs": true, "outbox": true, "store_identity": true, "goose_db_version": true,
	"sqlite_sequence": true, // the runs' and the outbox's ids: a text that reset them could reuse ids
}

// textGuard is the writer connection's authorizer. While a sql job's text is compiled (on is
// set), it refuses what would outlast the text's transaction on the store's one writer
// connection, or reach past the fence: a pragma (query_only would stop every later write, for
// one), attaching a database, a temporary table, view or trigger (a temporary trigger on
// job_fence could quietly ignore every later raise), a trigger of any kind, a virtual table,
// releasing or rolling back to the statements' mark, and changing the store's own tables or
// their schema. A text may still end the transaction (COMMIT), as on Postgres: Statements then
// fails the run (stillInTx), and the guard still holds for what the text runs after it. Everything else, the job's own tables, is
// the text's to do. It is installed on the connection for the text alone (guarding), so that
// the store's own statements pay nothing for it.
type textGuard struct {
	on   atomic.Bool
	mark atomic.Value               // string: the savepoint the statements' transaction is known by
	conn atomic.Pointer[registerer] // the writer's connection, the pool's one
}

type registerer = sqlite.AuthorizerRegisterer

// guardedConnector opens the writer's connections and tells the guard which one is open.
type guardedConnector struct {
	driver.Connector
	g *textGuard
}

// Connect opens a connection that can take the guard.
func (c guardedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	reg, ok := conn.(registerer)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("the sqlite driver's connection takes no authorizer")
	}
	c.g.conn.Store(&reg)
	return conn, nil
}

// guarding runs fn, a sql job's text on the writer inside the statements' transaction known by
// mark, under the guard.
func (g *textGuard) guarding(mark string, fn func() error) error {
	reg := g.conn.Load()
	if reg == nil {
		return errors.New("guard a sql job's text: no writer connection is open")
	}
	g.mark.Store(mark)
	if err := (*reg).RegisterAuthorizer(g.authorize); err != nil {
		return fmt.Errorf("guard a sql job's text: %w", err)
	}
	g.on.Store(true)
	defer func() {
		g.on.Store(false)
		_ = (*reg).RegisterAuthorizer(nil) // left installed, the guard is off and lets all through
	}()
	return fn()
}

// authorize is the sqlite.AuthorizerFn of the writer connection.
func (g *textGuard) authorize(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite.AuthorizerReturnCode {
	if !g.on.Load() {
		return sqlite.AuthorizerOK
	}
	switch action {
	case sqlite.AuthPragma, sqlite.AuthAttach, sqlite.AuthDetach,
		sqlite.AuthCreateTempTable, sqlite.AuthCreateTempIndex, sqlite.AuthCreateTempTrigger, sqlite.AuthCreateTempView,
		sqlite.AuthCreateTrigger, sqlite.AuthCreateVTable, sqlite.AuthDropVTable:
		return sqlite.AuthorizerDeny
	case sqlite.AuthSavepoint:
		if m, _ := g.mark.Load().(string); m != "" && strings.EqualFold(arg2, m) {
			return sqlite.AuthorizerDeny
		}
	case sqlite.AuthInsert, sqlite.AuthUpdate, sqlite.AuthDelete, sqlite.AuthDropTable, sqlite.AuthAlterTable,
		sqlite.AuthCreateIndex, sqlite.AuthDropIndex, sqlite.AuthDropTrigger:
		// arg1 is the table for a write and a table's drop; arg2 for an index's and a trigger's.
		table := arg1
		if action == sqlite.AuthAlterTable || action == sqlite.AuthCreateIndex || action == sqlite.AuthDropIndex || action == sqlite.AuthDropTrigger {
			table = arg2
		}
		if storeTables[strings.ToLower(table)] {
			return sqlite.AuthorizerDeny
		}
	}
	return sqlite.AuthorizerOK
}
