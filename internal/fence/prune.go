package fence

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"scheduler"
)

// Prune deletes at most r.Limit finished runs of r.Job that r lets go,
// oldest first, in one transaction fenced with token on the job, and
// returns how many it deleted. Running runs are never deleted. The same
// transaction deletes up to r.Limit delivered outbox messages of the job
// whose runs are gone, so that the messages of a slot go with its run. A caller
// prunes a job by calling Prune until it returns fewer than r.Limit.
func (s *Store) Prune(ctx context.Context, token int64, r scheduler.Retention) (int, error) {
	if err := checkJobToken(r.Job, token); err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	if r.Limit <= 0 {
		return 0, fmt.Errorf("prune runs of job %q: limit %d: want > 0", r.Job, r.Limit)
	}
	if r.Keep < 0 {
		return 0, fmt.Errorf("prune runs of job %q: keep %d: want >= 0", r.Job, r.Keep)
	}
	if r.Protect.IsZero() {
		return 0, fmt.Errorf("prune runs of job %q: no protected window", r.Job)
	}
	r.Before, r.Protect = normTime(r.Before), normTime(r.Protect)
	n, err := retried(ctx, s, r.Job, token, func() (int, error) { return s.b.prune(ctx, token, r) })
	if err != nil {
		return 0, fmt.Errorf("prune runs of job %q with token %d: %w", r.Job, token, err)
	}
	return n, nil
}

// pruneSQL selects the runs to delete: the oldest first, on the slot key
// index (job, scheduled_at, manual), which also finds the job's last run
// and the newest Keep finished runs by a backward scan. The placeholders
// are job, Before, Keep, Protect and Limit; {s} is the table's schema
// prefix.
const pruneSQL = `WITH last AS (
		SELECT r.run_id FROM {s}runs AS r WHERE r.job = $1
		ORDER BY r.scheduled_at DESC, r.manual DESC LIMIT 1),
	kept AS (
		SELECT r.scheduled_at, r.manual FROM {s}runs AS r WHERE r.job = $1 AND r.status <> 'running'
		ORDER BY r.scheduled_at DESC, r.manual DESC LIMIT 1 OFFSET {keepOffset}),
	doomed AS (
		SELECT r.run_id FROM {s}runs AS r
		WHERE r.job = $1 AND r.status <> 'running' AND r.scheduled_at < $4
			AND r.run_id NOT IN (SELECT run_id FROM last)
			AND (r.scheduled_at < $2 OR ($3 > 0 AND EXISTS (
				SELECT 1 FROM kept AS k WHERE (r.scheduled_at, r.manual) < (k.scheduled_at, k.manual))))
		ORDER BY r.scheduled_at, r.manual LIMIT $5)
	DELETE FROM {s}runs WHERE run_id IN (SELECT run_id FROM doomed)`

func (p *pgBackend) prune(ctx context.Context, token int64, r scheduler.Retention) (int, error) {
	q := strings.NewReplacer("{s}", pgx.Identifier{p.schema}.Sanitize()+".", "{keepOffset}", "GREATEST($3::int - 1, 0)").Replace(pruneSQL)
	var n int64
	err := p.fencedBatch(ctx, []string{r.Job}, token, func(b *pgx.Batch) {
		b.Queue(q, r.Job, r.Before, r.Keep, r.Protect, r.Limit).Exec(func(ct pgconn.CommandTag) error {
			n = ct.RowsAffected()
			return nil
		})
		b.Queue(p.outboxSQL(outboxPruneSQL), r.Job, r.Protect, r.Limit)
	})
	return int(n), err
}

func (l *liteBackend) prune(ctx context.Context, token int64, r scheduler.Retention) (int, error) {
	q := strings.NewReplacer("{s}", "", "{keepOffset}", "MAX($3 - 1, 0)").Replace(pruneSQL)
	var n int64
	err := l.fencedWrite(ctx, []string{r.Job}, token, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q, r.Job, r.Before.UnixMicro(), r.Keep, r.Protect.UnixMicro(), r.Limit)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, liteOutboxSQL(outboxPruneSQL), r.Job, r.Protect.UnixMicro(), r.Limit)
		return err
	})
	return int(n), err
}
