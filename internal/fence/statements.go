package fence

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"scheduler/internal/fence/internal/verdict"
)

// rolePattern is the accepted form of FencedStatements' role, the form of
// Config.Schema: a role created with an unquoted lower-case name.
var rolePattern = schemaPattern

// FencedStatements runs text, a sql job's, as a whole, under role when it
// is set, in one transaction fenced with token for job and commits it if
// every statement succeeded and the fence let it in. It returns the number
// of rows the statements inserted, updated or deleted, summed over the
// statements.
//
// text holds one or more statements separated by semicolons. It must not
// end the transaction itself (BEGIN, COMMIT, ROLLBACK): a text that does
// fails the run (on either store), also when it begins another transaction
// (COMMIT AND CHAIN, COMMIT; BEGIN), yet what it ran before a COMMIT is
// committed, and what it ran after one is not fenced (and on Postgres runs
// without role) unless it ran in a transaction the text began, which is
// rolled back; a serialization failure or deadlock after a COMMIT or
// PREPARE TRANSACTION of the text does not have the store run it again.
// role, when set, is the Postgres role the statements run
// under: after the fence is entered the transaction does SET LOCAL ROLE
// role. It is not a boundary on its own (the statements can RESET ROLE);
// see Config.JobDSN. SQLite has no roles and refuses it.
//
// On Postgres the text is sent with the simple query protocol, so that it
// may hold several statements. With Config.JobDSN set it runs on that
// connection, whose role enters the fence with the check-only
// fence_verify; otherwise it runs on the store's own connection, entering
// the fence as Fenced does. The rows the statements return are read one
// at a time and dropped (a row or notice over 64 MiB fails the run), and a
// COPY FROM STDIN fails at once (the store sends no data). Either way the fence is checked again right before the
// commit, as the session's own role and with functions and operators named
// with their schema (a search_path the text set cannot replace them), and
// the session is closed afterwards rather than reused, so nothing the
// statements set on it (a role, a setting, a session lock) outlives the
// run. A text that prepares the fenced transaction (PREPARE TRANSACTION, on
// a server whose max_prepared_transactions is not 0) fails the run like one
// that commits it, and the store rolls the prepared transaction back as
// its owner (found by the fenced transaction's id) before it answers, on
// a new session when the text's broke: it would outlive the session with
// the job's fence and its writes. A transaction the text prepared after
// the fenced one ended is left, counted in the error, since nothing tells
// it from another session's. A fence below token is raised by the
// store's own role, as in Fenced, and the statements run again. On SQLite
// the text runs inside the single writer's transaction after the fence
// check.
//
// A stale token returns a *scheduler.FenceError (errors.Is(err, ErrStale))
// and nothing commits.
//
// A COMMIT that the server never answered (the connection broke after it
// was sent) is not reported as a failure before the server has been asked
// whether the transaction committed: a failure would have the runner run
// the statements again, and they are not the runner's to repeat. See
// resolveInDoubt.
func (s *Store) FencedStatements(ctx context.Context, job string, token int64, role, text string) (int64, error) {
	if err := checkJobToken(job, token); err != nil {
		return 0, fmt.Errorf("fenced statements: %w", err)
	}
	if strings.TrimSpace(text) == "" {
		return 0, fmt.Errorf("fenced statements of job %q: no statements", job)
	}
	if role != "" && !rolePattern.MatchString(role) {
		return 0, fmt.Errorf("fenced statements of job %q: role %q: want a lower-case identifier matching %s", job, role, rolePattern)
	}
	n, err := retried(ctx, s, job, token, func() (int64, error) { return s.b.Statements(ctx, job, token, role, text) })
	var doubt *verdict.InDoubtError
	if errors.As(err, &doubt) {
		return s.resolveInDoubt(ctx, job, token, doubt)
	}
	return n, err
}
