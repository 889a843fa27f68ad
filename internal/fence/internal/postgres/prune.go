package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// Prune deletes the finished runs of r.Job that r lets go, and the delivered
// messages of the job whose runs are gone, in one batch fenced with token.
func (p *Backend) Prune(ctx context.Context, token int64, r scheduler.Retention) (int, error) {
	q := strings.NewReplacer("{s}", pgx.Identifier{p.schema}.Sanitize()+".", "{keepOffset}", "GREATEST($3::int - 1, 0)").Replace(tables.PruneSQL)
	var n int64
	err := p.fencedBatch(ctx, []string{r.Job}, token, func(b *pgx.Batch) {
		b.Queue(q, r.Job, r.Before, r.Keep, r.Protect, r.Limit).Exec(func(ct pgconn.CommandTag) error {
			n = ct.RowsAffected()
			return nil
		})
		b.Queue(p.outboxSQL(tables.OutboxPruneSQL), r.Job, r.Protect, r.Limit)
	})
	return int(n), err
}
