package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// heldSQL returns the jobs of $1 whose fence is below the token $2 (so that a raise to $2 takes
// the job's exclusive lock) and whose advisory lock another session holds now, in any mode. An
// advisory lock on a bigint key is listed with the key's high half as classid, its low half as
// objid and objsubid 1; the key is fence_check's, hashtextextended($3 || job, 0). Only granted
// locks count: a session waiting for the lock is queued behind one that holds it. The locks are
// read once, into a set, rather than once per job. A prepared transaction's locks have no pid:
// such a transaction holds the fence all the same, beyond its session.
const heldSQL = `WITH held AS MATERIALIZED (
    SELECT DISTINCT (l.classid::int8 << 32) | l.objid::int8 AS key
    FROM pg_catalog.pg_locks AS l
    WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
      AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid()
      AND l.database = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname = pg_catalog.current_database()))
SELECT u.job
FROM (SELECT DISTINCT x AS job FROM unnest($1::text[]) AS x) AS u
JOIN held AS h ON h.key = pg_catalog.hashtextextended($3 || u.job, 0)
LEFT JOIN {s}.job_fence AS f ON f.job = u.job
WHERE f.token IS NULL OR f.token < $2`

// Held returns the jobs of jobs whose raise to token would wait for another session: their
// fence is below token, and another session holds their advisory lock (a writer inside the
// fence, a job role after fence_verify, a raise or a reset). It reads pg_locks, which any role
// may read, once. Row locks on job_fence are not seen: the lock manager lists a row lock only
// while a session waits for it.
func (p *Backend) Held(ctx context.Context, jobs []string, token int64) ([]string, error) {
	rows, err := p.pool.Query(ctx, p.q.held, jobs, token, p.q.lockKey)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// lockedSQL returns the jobs of $1 whose advisory lock another session holds in exclusive mode
// (pg_advisory_lock or pg_advisory_xact_lock on fence_check's key, hashtextextended($2 || job,
// 0)), which makes a writer's shared lock wait: no writer of the scheduler takes it so, only a
// raise, which a running leader makes at its takeover and for a job it holds back.
const lockedSQL = `SELECT u.job
FROM (SELECT DISTINCT x AS job FROM unnest($1::text[]) AS x) AS u
WHERE EXISTS (
    SELECT FROM pg_catalog.pg_locks AS l
    WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted AND l.mode = 'ExclusiveLock'
      AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid()
      AND l.database = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname = pg_catalog.current_database())
      AND (l.classid::int8 << 32) | l.objid::int8 = pg_catalog.hashtextextended($2 || u.job, 0))`

// locked returns the jobs of jobs whose fence another session holds exclusively (lockedSQL).
func (p *Backend) locked(ctx context.Context, jobs []string) ([]string, error) {
	rows, err := p.pool.Query(ctx, lockedSQL, jobs, p.q.lockKey)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
