package fence

import (
	"testing"

	"scheduler/internal/testenv"
)

// TestPostgres_OutboxEnqueueNotifyKeys: a job role cannot queue a key of a failure notification
// first, which would make the notification of its slot a redo and silence it.
func TestPostgres_OutboxEnqueueNotifyKeys(t *testing.T) {
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	if err := s.RaiseAll(ctx, []string{"invoices"}, 10); err != nil {
		t.Fatal(err)
	}
	conn := connectAs(t, ctx, testenv.MustRole(t, dsn, "notify_job", outboxRoleRecipe...))
	for _, key := range []string{"notify.invoices.1772330400000000.failed.0a1b2c3d4e5f", "Notify.invoices.1", "NOTIFY.x"} {
		if _, err := conn.Exec(ctx, enqueueSQL, int64(10), key); sqlState(err) != "42501" {
			t.Errorf("enqueue with a notification's key %q: err %v, want insufficient_privilege (42501)", key, err)
		}
	}
	var queued bool
	if err := conn.QueryRow(ctx, enqueueSQL, int64(10), "notifyish.own.1").Scan(&queued); err != nil || !queued {
		t.Fatalf("enqueue with the job's own key: queued %v, err %v", queued, err)
	}
}
