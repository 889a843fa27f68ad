package fence

import (
	"context"
	"sync"
	"testing"
	"time"

	"scheduler/internal/fence/internal/postgres"
	"scheduler/internal/testenv"
)

// TestPostgres_FencedStatementsBoundedConnections: sql jobs running at once hold at most the
// job pool's size of connections, on the store's own DSN and on job_dsn alike; the texts beyond
// it wait for a place, and the store's own writes get a connection meanwhile. Before, each
// text's connection was taken out of its pool, which then opened another for the next text: a
// herd of slow texts opened a connection each, and beyond the server's max_connections the
// texts failed ("too many clients").
func TestPostgres_FencedStatementsBoundedConnections(t *testing.T) {
	pg := testenv.MustPostgres(t, "max_connections=30")
	for _, c := range []struct {
		name   string
		jobDSN bool
	}{{"StoreDSN", false}, {"JobDSN", true}} {
		t.Run(c.name, func(t *testing.T) {
			js := jobSetupOn(t, pg.CreateDatabase(t))
			ctx := testCtx(t)
			s, role := js.jobs, js.role
			if !c.jobDSN {
				s, role = js.owner, ""
			}
			if err := js.owner.RaiseAll(ctx, []string{"job"}, 10); err != nil {
				t.Fatal(err)
			}
			const texts = 60 // twice the server's connections
			var (
				wg   sync.WaitGroup
				errs = make(chan error, texts)
				peak int
				stop = make(chan struct{})
			)
			for range texts {
				wg.Go(func() {
					_, err := s.FencedStatements(ctx, "job", 10, role, `SELECT pg_sleep(0.3)`)
					errs <- err
				})
			}
			var watch sync.WaitGroup
			watch.Go(func() {
				for {
					var n int
					if err := js.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
						WHERE datname = current_database() AND state = 'active' AND query LIKE '%pg_sleep(0.3)%' AND pid <> pg_backend_pid()`).Scan(&n); err == nil {
						peak = max(peak, n)
					}
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			})
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := js.owner.RaiseAll(wctx, []string{"other"}, 10); err != nil {
				t.Errorf("the store's own write beside the texts: %v", err)
			}
			wg.Wait()
			close(stop)
			watch.Wait()
			close(errs)
			failed := 0
			for err := range errs {
				if err != nil {
					if failed++; failed == 1 {
						t.Errorf("a text: %v", err)
					}
				}
			}
			if failed > 0 {
				t.Errorf("%d of %d texts failed, want none", failed, texts)
			}
			if limit := s.b.(*postgres.Backend).JobConns(); peak > limit {
				t.Errorf("%d texts ran on %d connections at once, want at most %d", texts, peak, limit)
			}
			if peak == 0 {
				t.Error("no text was seen running")
			}
		})
	}
}
