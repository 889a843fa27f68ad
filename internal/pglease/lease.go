package pglease

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"scheduler/internal/lease"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// queries are the statements on the lease row, over one schema. Every
// expiry is compared with and computed from clock_timestamp(), the
// database's clock when the statement runs: no replica's clock is trusted
// with the lease, and all of them see the same clock.
type queries struct {
	acquire, renew, release, confirm, read string
}

// newQueries returns the statements for the tables in schema.
func newQueries(schema string) queries {
	s := pgx.Identifier{schema}.Sanitize()
	return queries{
		// A free or expired row is taken, and its token raised above both
		// its own last value and every fence in the store, in the one
		// statement: the row lock of ON CONFLICT makes concurrent grants
		// queue, and the later ones find the lease held. A row without a
		// holder or a node is free whatever its expiry: a grant always names
		// both, and a release clears them, so only a hand-written row lacks
		// one while it runs. $1 name, $2 node,
		// $3 holder, $4 TTL in ms, $5 channel.
		acquire: fmt.Sprintf(`WITH g AS (
    INSERT INTO %[1]s.leader_lease AS l (name, node, holder, token, since, expires_at)
    VALUES ($1, $2, $3, GREATEST((SELECT max(f.token) FROM %[1]s.job_fence AS f), 0) + 1,
            clock_timestamp(), clock_timestamp() + $4 * interval '1 millisecond')
    ON CONFLICT (name) DO UPDATE
    SET node = excluded.node, holder = excluded.holder, since = excluded.since, expires_at = excluded.expires_at,
        token = GREATEST(l.token, (SELECT max(f.token) FROM %[1]s.job_fence AS f)) + 1
    WHERE l.expires_at <= clock_timestamp() OR l.holder IS NULL OR coalesce(l.node, '') = ''
    RETURNING l.token
)
SELECT token, pg_notify($5, 'granted') FROM g`, s),
		renew: fmt.Sprintf(`UPDATE %s.leader_lease
SET expires_at = clock_timestamp() + $3 * interval '1 millisecond'
WHERE name = $1 AND holder = $2 AND expires_at > clock_timestamp()
RETURNING token`, s),
		release: fmt.Sprintf(`WITH r AS (
    UPDATE %s.leader_lease SET node = NULL, holder = NULL, expires_at = '-infinity'
    WHERE name = $1 AND holder = $2
    RETURNING name
)
SELECT pg_notify($3, 'released') FROM r`, s),
		confirm: fmt.Sprintf(`SELECT EXISTS (SELECT FROM %s.leader_lease
WHERE name = $1 AND holder = $2 AND token = $3 AND expires_at > clock_timestamp())`, s),
		// remaining is how long the lease still runs, zero when it has
		// expired or was released, and at most what a time.Duration holds
		// (an expiry written by hand may be 'infinity').
		read: fmt.Sprintf(`SELECT CASE WHEN holder IS NULL THEN '' ELSE coalesce(node, '') END, token,
    CASE WHEN isfinite(since) THEN since ELSE 'epoch' END,
    GREATEST(extract(epoch FROM LEAST(expires_at, clock_timestamp() + interval '290 years') - clock_timestamp()) * 1000, 0)::bigint
FROM %s.leader_lease WHERE name = $1`, s),
	}
}

// ErrNoLeader is returned by ReadLeader when nobody holds the lease.
var ErrNoLeader = errors.New("pglease: no leader")

// Leader is who holds a lease, as read from the database.
type Leader struct {
	// Node is the holder's replica name.
	Node string
	// Token is the holder's fencing token.
	Token int64
	// Since is when the lease was granted, by the database's clock (the Unix epoch for a row
	// written by hand with an infinite time).
	Since time.Time
	// Remaining is how long the lease runs unless renewed, by the
	// database's clock.
	Remaining time.Duration
	// Problems describe what in the row keeps the election from working,
	// each with its remedy; ReadLeader sets them also when it returns
	// ErrNoLeader.
	Problems []string
}

// ReadLeader reads who holds the lease of election name in schema right
// now. It returns ErrNoLeader when the lease is free or has expired.
func ReadLeader(ctx context.Context, pool *pgxpool.Pool, schema, name string) (Leader, error) {
	return readLeader(ctx, pool, newQueries(schema).read, name)
}

func readLeader(ctx context.Context, pool *pgxpool.Pool, q, name string) (Leader, error) {
	var (
		l  Leader
		ms int64
	)
	err := pool.QueryRow(ctx, q, name).Scan(&l.Node, &l.Token, &l.Since, &ms)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Leader{}, ErrNoLeader
	case err != nil:
		return Leader{}, fmt.Errorf("read lease %q: %w", name, err)
	}
	if l.Token == math.MaxInt64 {
		l.Problems = []string{fmt.Sprintf("the token of lease %q is the largest bigint: no replica can be granted the "+
			"lease; set it back to the store's highest fence with: UPDATE leader_lease SET token = (SELECT max(token) FROM "+
			"job_fence) WHERE name = '%s' (in the store's schema)", name, strings.ReplaceAll(name, "'", "''"))}
	}
	if ms == 0 || l.Node == "" {
		return Leader{Problems: l.Problems}, ErrNoLeader
	}
	l.Remaining = time.Duration(ms) * time.Millisecond
	return l, nil
}

// acquire tries to take the lease for holder. ok is false when someone else
// holds it; wait is then how long their lease still runs.
func (c *Campaigner) acquire(ctx context.Context, holder string) (token int64, ok bool, wait time.Duration, err error) {
	var note string
	err = c.pool.QueryRow(ctx, c.q.acquire, c.cfg.Name, c.cfg.Node, holder, c.cfg.TTL.Milliseconds(), c.ch).Scan(&token, &note)
	if err == nil {
		return token, true, 0, nil
	}
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "22003" { // numeric_value_out_of_range
		return 0, false, 0, fmt.Errorf("acquire lease %q: %w: %w: the lease's token or the store's highest fence is the largest "+
			"bigint, and no token is left above it; if the row's token was set by hand, set it back to the highest fence "+
			"with: %s; if a fence is that high, reset the store's fences (fence_admin_reset) first",
			c.cfg.Name, err, lease.ErrNeedsOperator, c.setBack(ctx))
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, false, 0, fmt.Errorf("acquire lease %q: %w", c.cfg.Name, err)
	}
	l, err := readLeader(ctx, c.pool, c.q.read, c.cfg.Name)
	if err != nil && !errors.Is(err, ErrNoLeader) {
		return 0, false, 0, err
	}
	return 0, false, l.Remaining, nil
}

// renewFor returns the renewal of holder's lease.
func (c *Campaigner) renewFor(holder string) func(context.Context) error {
	return func(ctx context.Context) error {
		var token int64
		err := c.pool.QueryRow(ctx, c.q.renew, c.cfg.Name, holder, c.cfg.TTL.Milliseconds()).Scan(&token)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("renew lease %q: %w", c.cfg.Name, errGone)
		case err != nil:
			return fmt.Errorf("renew lease %q: %w", c.cfg.Name, err)
		}
		return nil
	}
}

// release gives holder's lease up and wakes the followers, so that the next
// one takes over at once instead of after the TTL.
func (c *Campaigner) release(ctx context.Context, holder string) error {
	rows, err := c.pool.Query(ctx, c.q.release, c.cfg.Name, holder, c.ch)
	if err != nil {
		return fmt.Errorf("release lease %q: %w", c.cfg.Name, err)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("release lease %q: %w", c.cfg.Name, err)
	}
	return nil
}

// setBack returns the statement that sets the lease's token back to the
// store's highest fence, read now, or, when it cannot be read, one that
// reads it itself.
func (c *Campaigner) setBack(ctx context.Context) string {
	s := pgx.Identifier{c.cfg.Schema}.Sanitize()
	name := "'" + strings.ReplaceAll(c.cfg.Name, "'", "''") + "'"
	var fence int64
	q := fmt.Sprintf(`SELECT coalesce(max(token), 1) FROM %s.job_fence`, s)
	if err := c.pool.QueryRow(ctx, q).Scan(&fence); err != nil {
		return fmt.Sprintf("UPDATE %s.leader_lease SET token = (%s) WHERE name = %s", s, q, name)
	}
	return fmt.Sprintf("UPDATE %s.leader_lease SET token = %d WHERE name = %s", s, max(fence, 1), name)
}
