package fence

import "testing"

// TestPostgres_OutboxEnqueueNotifyKeys: a job role cannot queue a key of a failure notification
// first, which would make the notification of its slot a redo and silence it.
func TestPostgres_OutboxEnqueueNotifyKeys(t *testing.T) {
	testReservedKeys(t, "notify_job", "a notification's",
		[]string{"notify.invoices.1772330400000000.failed.0a1b2c3d4e5f", "Notify.invoices.1", "NOTIFY.x"}, "invoices.notifyish.1")
}
