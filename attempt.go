package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Attempt is one attempt of a job at a slot, as its kind's Executor receives it, with the fenced
// transaction of the store bound to the attempt's job and token.
type Attempt struct {
	Job     string    // job name
	Slot    time.Time // the scheduled slot (for a manual trigger: the trigger time)
	Token   int64     // fencing token of the leadership term that runs it
	Attempt int       // 1 for the first attempt, 2 for the first retry...
	RunID   string    // stable across the retries of one slot: use it as an idempotency key
	Manual  bool      // started by `scheduler trigger`, not by the schedule
	// Fencer is the store the attempt's fenced writes go through; the runner sets it from its
	// ledger. Kinds write through Fenced and FencedStatements rather than through it, so that a
	// write cannot carry another job's name or another term's token.
	Fencer Fencer
	// Live, when set, takes a copy of what the attempt prints while it runs, so that the run
	// can be followed (`scheduler logs -f`); kinds that print (exec) write to it. Nil: none.
	Live LiveOutput
}

// LiveOutput keeps the output of the runs in progress, for following them.
type LiveOutput interface {
	// Open returns where an attempt of job's run runID writes its output as it prints it, and
	// done, which the attempt calls once it has printed everything. The writer never fails.
	Open(job, runID string) (w io.Writer, done func())
}

// ErrNoFencer reports a fenced write of an Attempt that has no Fencer: nothing was written.
var ErrNoFencer = errors.New("scheduler: the attempt has no store to write through")

// Fenced runs fn in one transaction of the store fenced with the attempt's token for its job;
// see Fencer.Fenced.
func (a Attempt) Fenced(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	if a.Fencer == nil {
		return fmt.Errorf("fenced write of job %q with token %d: %w", a.Job, a.Token, ErrNoFencer)
	}
	return a.Fencer.Fenced(ctx, a.Job, a.Token, fn)
}

// FencedStatements runs text as a whole in one transaction of the store fenced with the
// attempt's token for its job, under role when it is set; see Fencer.FencedStatements. The
// context carries the attempt's slot (WithSlot) and its run secret (WithRunSecret), which the
// store hands to the text.
func (a Attempt) FencedStatements(ctx context.Context, role, text string) (int64, error) {
	if a.Fencer == nil {
		return 0, fmt.Errorf("fenced statements of job %q with token %d: %w", a.Job, a.Token, ErrNoFencer)
	}
	secret, err := a.Secret(ctx)
	if err != nil {
		return 0, fmt.Errorf("fenced statements of job %q with token %d: %w", a.Job, a.Token, err)
	}
	return a.Fencer.FencedStatements(WithRunSecret(WithSlot(ctx, a.Slot, a.Manual), secret), a.Job, a.Token, role, text)
}

// Secret returns the attempt's run secret, with which the job's own transaction proves to the
// store's outbox_enqueue that a message it queues is of this run (see Fencer.RunSecret); empty
// where the store has none, or the attempt no store.
func (a Attempt) Secret(ctx context.Context) (string, error) {
	if a.Fencer == nil {
		return "", nil
	}
	return a.Fencer.RunSecret(ctx, a.RunID)
}

// Enqueue queues m in tx, a transaction of the attempt's Fenced, as a message of the attempt's
// slot: it sets m's Job, Token, ScheduledAt and Manual from the attempt, so that a kind cannot
// queue a message of another job, slot or term. It reports whether it queued m (false: a
// message with m.Key exists, a redo of the slot); see Fencer.Enqueue.
func (a Attempt) Enqueue(ctx context.Context, tx Tx, m Message) (bool, error) {
	if a.Fencer == nil {
		return false, fmt.Errorf("enqueue message %q of job %q with token %d: %w", m.Key, a.Job, a.Token, ErrNoFencer)
	}
	m.Job, m.Token, m.ScheduledAt, m.Manual = a.Job, a.Token, a.Slot, a.Manual
	return a.Fencer.Enqueue(ctx, tx, m)
}

// Executor runs one attempt. output is a bounded excerpt of what the job printed or returned,
// stored in the run ledger. A nil error means success.
//
// Execute returns once everything the attempt started has ended. When ctx is done it stops the
// attempt and returns an error wrapping ctx.Err(). An error wrapping ErrFenced or ErrRefused
// must not be retried; an error marked Permanent need not be.
type Executor interface {
	Execute(ctx context.Context, a Attempt) (output string, err error)
}

// Fencer runs a job's writes in transactions of the store fenced with a term's token. The store
// implements it.
//
// Each transaction's first statement is the fence check for (job, token); a stale token fails
// with an error wrapping ErrFenced and nothing commits. The check also raises a lower fence to
// token, so the first fenced write of a term shuts out every older term.
type Fencer interface {
	// Fenced runs fn in one fenced transaction. fn's error rolls the transaction back and is
	// returned (wrapped or not); a nil error commits. fn may be called again, in a new
	// transaction, when the store retries a serialization failure, so it must set rather than
	// accumulate what it reports, and must not keep tx.
	Fenced(ctx context.Context, job string, token int64, fn func(ctx context.Context, tx Tx) error) error
	// FencedStatements runs text (one or more statements separated by semicolons) as a whole
	// in one fenced transaction, under the database role role when it is set, and returns the
	// number of rows the statements inserted, updated or deleted.
	FencedStatements(ctx context.Context, job string, token int64, role, text string) (int64, error)
	// Enqueue queues m in the outbox within tx, a transaction of Fenced for m.Job with m.Token,
	// so that the message commits with the job's results or not at all. It reports whether it
	// queued m: false when a message with m.Key exists already. A token that is not the job's
	// fence fails with an error wrapping ErrFenced, and fn must return it.
	Enqueue(ctx context.Context, tx Tx, m Message) (bool, error)
	// RunSecret returns the secret of the run runID (a Run.RunID in decimal), which a job's own
	// transaction sets as scheduler.run_secret so that Postgres's outbox_enqueue takes its
	// messages as the run's; empty where the store has no such function (SQLite).
	RunSecret(ctx context.Context, runID string) (string, error)
}

// Dialect names the SQL dialect of a store, for writes whose statements differ between
// Postgres and SQLite.
type Dialect string

// The dialects of the two stores.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// Tx is the transaction a fenced function writes through, the same on both stores.
// Placeholders are $1..$n on both (SQLite binds $N to the N-th argument). A missing row is
// reported as sql.ErrNoRows on both. The Tx is valid only until the function returns.
type Tx interface {
	// Exec runs a statement and returns the number of rows it affected.
	Exec(ctx context.Context, sql string, args ...any) (rowsAffected int64, err error)
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
