package fence

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"scheduler/internal/testenv"
)

// TestPostgres_CommitReplyLost: the connection of a sql job's statements breaks while the
// server is committing them (a deferred trigger makes the COMMIT take a while), so the reply
// never comes. FencedStatements asks the server what became of the transaction: one that
// committed is the rows written, not a failure the runner would run again; one the server
// rolled back is the commit's failure. Both with the store's own connection and with the job
// connection of Config.JobDSN.
func TestPostgres_CommitReplyLost(t *testing.T) {
	for _, jobDSN := range []bool{false, true} {
		t.Run(fmt.Sprintf("JobDSN=%v", jobDSN), func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			dsn := testenv.MustDatabase(t)
			admin := testenv.Connect(ctx, t, dsn)
			if _, err := admin.Exec(ctx, `CREATE TABLE slow_commit (n int);
				CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN
					PERFORM pg_sleep(2);
					IF NEW.n < 0 THEN RAISE EXCEPTION 'refused at commit'; END IF;
					RETURN NULL;
				END $$;
				CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON slow_commit
					DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit();`); err != nil {
				t.Fatal(err)
			}
			cfg := Config{DSN: dsn}
			var proxy *testenv.Proxy
			if jobDSN {
				mustOpen(t, Config{DSN: dsn}) // the schema, for the role's grants
				role := testenv.MustRole(t, dsn, "slow_job",
					`ALTER ROLE {role} NOINHERIT`,
					`GRANT USAGE ON SCHEMA scheduler TO {role}`,
					`GRANT EXECUTE ON FUNCTION scheduler.fence_verify(text, bigint) TO {role}`,
					`GRANT INSERT ON public.slow_commit TO {role}`)
				cfg.JobDSN, proxy = testenv.ProxiedDSN(t, role)
			} else {
				cfg.DSN, proxy = testenv.ProxiedDSN(t, dsn)
			}
			s := mustOpen(t, cfg)
			if err := s.RaiseAll(ctx, []string{"job"}, 10); err != nil {
				t.Fatal(err)
			}
			rows := func(n int) int {
				var c int
				if err := admin.QueryRow(ctx, `SELECT count(*) FROM slow_commit WHERE n = $1`, n).Scan(&c); err != nil {
					t.Fatal(err)
				}
				return c
			}
			// committing waits until the job's backend is inside its COMMIT's trigger.
			committing := func() {
				t.Helper()
				testenv.Eventually(t, 20*time.Second, 10*time.Millisecond, "the job's COMMIT reached its deferred trigger", func() bool {
					return sleepers(t, admin) == 1
				})
			}
			run := func(n int) <-chan error {
				done := make(chan error, 1)
				go func() {
					got, err := s.FencedStatements(ctx, "job", 10, "", fmt.Sprintf(`INSERT INTO slow_commit VALUES (%d)`, n))
					if err == nil && got != 1 {
						err = fmt.Errorf("%d rows, want 1", got)
					}
					done <- err
				}()
				return done
			}

			// cut breaks the job's connection while its COMMIT runs, so that pgconn's cancel
			// request on the broken connection cannot reach the server, and returns the run's
			// answer. The job connection (JobDSN) stays cut until the answer, which the
			// store's own connection asks for, seeing the COMMIT in progress first; the store's
			// own connection is healed once the server has finished the COMMIT.
			cut := func(done <-chan error) error {
				t.Helper()
				committing()
				proxy.Cut()
				defer proxy.Resume()
				if !jobDSN {
					testenv.Eventually(t, 20*time.Second, 10*time.Millisecond, "the server finished the COMMIT", func() bool {
						return sleepers(t, admin) == 0
					})
					proxy.Resume()
				}
				return <-done
			}
			if err := cut(run(1)); err != nil {
				t.Fatalf("a commit whose reply was lost, committed: %v; want its rows", err)
			}
			if got := rows(1); got != 1 {
				t.Fatalf("%d rows committed, want 1", got)
			}
			if err := cut(run(-1)); err == nil {
				t.Fatal("a commit whose reply was lost, rolled back: succeeded")
			}
			if got := rows(-1); got != 0 {
				t.Fatalf("%d rows of a rolled-back commit, want 0", got)
			}
			// Healed at once: pgconn's cancel request may reach the server and roll the
			// COMMIT back, or not; the answer must agree with the data either way.
			done := run(2)
			committing()
			proxy.Cut()
			proxy.Resume()
			err := <-done
			if got := rows(2); (err == nil) != (got == 1) || got > 1 {
				t.Fatalf("healed at once: err %v, %d rows: the answer disagrees with the data", err, got)
			}
		})
	}
}

// sleepers returns how many backends of conn's database are in pg_sleep.
func sleepers(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var c int
	if err := conn.QueryRow(testCtx(t), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event = 'PgSleep'`).Scan(&c); err != nil {
		t.Fatal(err)
	}
	return c
}
