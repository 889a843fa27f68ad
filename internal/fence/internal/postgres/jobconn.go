package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// jobConn returns a connection of its own for a sql job's statements and the function that
// closes it and frees its place. The statements may change the session (SET ROLE, a setting,
// a session advisory lock, a temporary table), so the connection is taken out of its pool and
// closed after them instead of serving anyone else. A pool forgets a connection taken out of it
// and opens another for the next caller, so the pool alone does not bound how many such
// connections are open: jobConns does, at the pool's size. Without that bound a herd of slow
// texts opened a connection each, up to the server's max_connections, and then the texts and the
// store's own writes failed alike. A text beyond the bound waits for a place, under its run's
// deadline.
func (p *Backend) jobConn(ctx context.Context) (*pgx.Conn, func(), error) {
	pool := p.statementsPool()
	select {
	case p.jobConns <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("wait for one of the %d connections of sql jobs: %w", cap(p.jobConns), context.Cause(ctx))
	}
	c, err := pool.Acquire(ctx)
	if err != nil {
		<-p.jobConns
		return nil, nil, fmt.Errorf("connect for the statements: %w", err)
	}
	conn := c.Hijack()
	return conn, func() {
		_ = conn.Close(context.WithoutCancel(ctx))
		<-p.jobConns
	}, nil
}

// statementsPool is the pool of sql jobs' connections: the job pool when there is one.
func (p *Backend) statementsPool() *pgxpool.Pool {
	if p.jobPool != nil {
		return p.jobPool
	}
	return p.pool
}

// JobConns is how many connections sql jobs' statements may hold at once.
func (p *Backend) JobConns() int { return cap(p.jobConns) }
