package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"scheduler/internal/fence/internal/verdict"
)

// unprepareWait bounds the rollback of a transaction a text prepared: it runs after the run's
// own context may have ended (its timeout cut the text short), and must not hold the run for
// good when the server cannot be reached.
const unprepareWait = 10 * time.Second

// mayPrepare reports whether text can have prepared a transaction: PREPARE TRANSACTION runs
// only as a statement of its own at the top level, never in a function, and a keyword cannot
// be quoted or escaped, so the word is in the text of any that did.
func mayPrepare(text string) bool {
	return strings.Contains(strings.ToLower(text), "prepare")
}

// unprepare finishes what a text that prepared transactions left behind (prepares is how many
// the session reported; none when the session broke before the text's results were all read,
// which text may then have prepared unseen), and returns the run's error. The fenced
// transaction, whose id is xid, is found in pg_prepared_xacts by that id, never by a name the
// text chose, and rolled back as its owner (the role current at PREPARE, which the session's
// own role can always become again, since the text could only become roles it can), on pgc or,
// when that session broke, on a new one of pool: left alone, it would keep the job's fence
// (its shared lock outlives the session) and writes that its role could commit later, outside
// any fence, after the run was recorded failed. A transaction the text prepared after the
// fenced one ended is not the run's to tell from another session's, and is left, named by
// count. textErr is the text's own error, if any.
func unprepare(ctx context.Context, pool *pgxpool.Pool, pgc *pgconn.PgConn, xid string, prepares int, textErr error) error {
	bound, cancel := context.WithTimeout(context.WithoutCancel(ctx), unprepareWait)
	defer cancel()
	p := prepared{xid: xid32(xid), prepares: prepares, textErr: textErr}
	if pgc.IsClosed() {
		c, err := pool.Acquire(bound)
		if err != nil {
			return p.unchecked(fmt.Errorf("connect: %w", err))
		}
		// SET ROLE below changes the session: it is closed, not returned to the pool.
		conn := c.Hijack()
		defer func() { _ = conn.Close(bound) }()
		pgc = conn.PgConn()
	}
	if err := p.find(bound, pgc); err != nil {
		return p.unchecked(err)
	}
	if p.gid == "" {
		return p.notFound()
	}
	// ROLLBACK PREPARED runs only outside a transaction block, so alone in its message.
	for _, sql := range []string{`SET ROLE ` + pgx.Identifier{p.owner}.Sanitize(), `ROLLBACK PREPARED ` + literal(p.gid)} {
		if _, err := pgc.Exec(bound, sql).ReadAll(); err != nil {
			return p.failed(err)
		}
	}
	// The session is closed after the run: a failed reset leaves nothing behind.
	_, _ = pgc.Exec(bound, `RESET ROLE`).ReadAll()
	return p.rolledBack()
}

// prepared is what unprepare learns of a text's prepared transactions.
type prepared struct {
	xid        string // the fenced transaction's id as pg_prepared_xacts shows it
	prepares   int    // the PREPARE TRANSACTIONs the session reported
	textErr    error  // the text's own error, or nil
	gid, owner string // the fenced transaction's gid and owner, once found
}

// find ends a transaction the text left open on pgc (ending it is what closing the session
// would do), restores the session's settings, whatever the text set on it (a client encoding
// or standard_conforming_strings would change how the gid reads in a literal), and looks up
// the fenced transaction in pg_prepared_xacts.
func (p *prepared) find(ctx context.Context, pgc *pgconn.PgConn) error {
	sql := `RESET ALL; SELECT gid, owner FROM pg_catalog.pg_prepared_xacts WHERE transaction OPERATOR(pg_catalog.=) '` + p.xid + `'::pg_catalog.xid`
	if pgc.TxStatus() != 'I' {
		sql = `ROLLBACK; ` + sql
	}
	results, err := pgc.Exec(ctx, sql).ReadAll()
	if err != nil {
		return fmt.Errorf("look for it in pg_prepared_xacts: %w", err)
	}
	if rows := results[len(results)-1].Rows; len(rows) == 1 && len(rows[0]) == 2 {
		p.gid, p.owner = string(rows[0][0]), string(rows[0][1])
	}
	return nil
}

// rolledBack is the run's error once the fenced transaction was rolled back.
func (p *prepared) rolledBack() error {
	err := fmt.Errorf("%w: it prepared the fenced transaction (PREPARE TRANSACTION %s), which the scheduler rolled back (ROLLBACK PREPARED): nothing of it committed%s",
		verdict.ErrTxEnded, literal(p.gid), p.others(true))
	return p.withText(err)
}

// failed is the run's error when rolling back the fenced transaction failed with err.
func (p *prepared) failed(err error) error {
	return p.withText(fmt.Errorf("%w: it prepared the fenced transaction (PREPARE TRANSACTION %s), and rolling it back failed: %w; "+
		"until someone runs ROLLBACK PREPARED %s (as role %s or a superuser), it keeps its writes, unfenced, and the job's fence, "+
		"which holds the job back at the next leader's takeover%s",
		verdict.ErrTxEnded, literal(p.gid), err, literal(p.gid), pgx.Identifier{p.owner}.Sanitize(), p.others(true)))
}

// unchecked is the run's error when pg_prepared_xacts could not be read (err).
func (p *prepared) unchecked(err error) error {
	what := "the session broke while the text's results were read, so the text may have prepared the fenced transaction unseen"
	if p.prepares > 0 {
		what = fmt.Sprintf("it prepared %d transaction(s) (PREPARE TRANSACTION)", p.prepares)
	}
	return p.withText(fmt.Errorf("%w: %s, and finding the fenced transaction in pg_prepared_xacts failed: %w; if "+
		"SELECT gid, owner FROM pg_prepared_xacts WHERE transaction = '%s' finds it, it keeps its writes, unfenced, "+
		"and the job's fence, which holds the job back at the next leader's takeover, until someone runs ROLLBACK PREPARED "+
		"of that gid as that owner or a superuser", verdict.ErrTxEnded, what, err, p.xid))
}

// notFound is the run's error when the fenced transaction is not prepared: the session broke
// before the text prepared it (and so rolled it back), or the text had ended it before its
// PREPARE TRANSACTIONs.
func (p *prepared) notFound() error {
	if p.prepares == 0 && p.textErr != nil {
		return p.textErr
	}
	return p.withText(fmt.Errorf("%w%s", verdict.ErrTxEnded, p.others(false)))
}

// others says what the text prepared besides the fenced transaction, which fenced says is
// one of the prepares counted.
func (p *prepared) others(fenced bool) string {
	n := p.prepares
	if fenced {
		n--
	}
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("; it also prepared %d transaction(s) after the fenced one ended, outside the fence, which the scheduler "+
		"leaves, since it cannot tell them from another session's: find them in pg_prepared_xacts (a transaction above %s)", n, p.xid)
}

// withText adds the text's own error to err.
func (p *prepared) withText(err error) error {
	if p.textErr == nil {
		return err
	}
	return fmt.Errorf("%w; the text's error: %w", err, p.textErr)
}

// xid32 returns the transaction id of a full one (txid_current's, with its epoch) as
// pg_prepared_xacts shows it: its low half.
func xid32(xid string) string {
	full, err := strconv.ParseUint(xid, 10, 64)
	if err != nil {
		return "0" // no such transaction: nothing is found
	}
	return strconv.FormatUint(full&0xffffffff, 10)
}

// literal quotes s as an escape string constant, which reads the same whatever
// standard_conforming_strings says.
func literal(s string) string {
	return `E'` + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + `'`
}
