package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

// Prune deletes the finished runs of r.Job that r lets go, and the delivered
// messages of the job whose runs are gone, in one fenced write.
func (l *Backend) Prune(ctx context.Context, token int64, r scheduler.Retention) (int, error) {
	q := strings.NewReplacer("{s}", "", "{keepOffset}", "MAX($3 - 1, 0)").Replace(tables.PruneSQL)
	var n int64
	err := l.fencedWrite(ctx, []string{r.Job}, token, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q, r.Job, r.Before.UnixMicro(), r.Keep, r.Protect.UnixMicro(), r.Limit)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, liteOutboxSQL(tables.OutboxPruneSQL), r.Job, r.Protect.UnixMicro(), r.Limit)
		return err
	})
	return int(n), err
}
