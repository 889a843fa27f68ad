package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"scheduler"
	"scheduler/internal/testenv/rawhttp"
)

// hugeReasonServer answers every request 500 with a reason phrase of n bytes; it returns its URL.
func hugeReasonServer(t *testing.T, n int) string {
	return rawhttp.Serve(t, "HTTP/1.1 500 "+strings.Repeat("x", n)+"\r\n")
}

// TestDaemon_HugeReasonIsNotified: an http job's receiver answering 500 with a reason phrase of
// megabytes, and on Postgres a sql job raising an error of megabytes, on jobs that notify their
// failures: each slot is recorded failed and its notification delivered, with the error cut
// short. Before, the notification's body exceeded
// the outbox's bound, so the outcome written with it was refused again and again: the run stayed
// running for the whole term, every later slot was skipped, and the next leader ran it again.
func TestDaemon_HugeReasonIsNotified(t *testing.T) {
	hooks := newHookReceiver(t)
	target := hugeReasonServer(t, 3<<20)
	forEachDaemonStore(t, "", func(t *testing.T, c *cluster) {
		jobs := []string{"huge"}
		sqlJob := ""
		if c.dsn != "" {
			jobs = append(jobs, "hugesql")
			sqlJob = fmt.Sprintf(`
  - name: hugesql
    schedule: "* * * * * *"
    type: sql
    sql: "DO $$ BEGIN RAISE EXCEPTION '%%', repeat('y', 3000000); END $$"
    misfire: skip
    notify: {on: [failed], webhook: %q}
`, hooks.URL+"/notify")
		}
		c.writeConfig(fmt.Sprintf(`
outbox: {webhook: {hosts: [127.0.0.1]}, retry_backoff: 100ms}
jobs:
  - name: huge
    schedule: "* * * * * *"
    type: http
    url: %q
    misfire: skip
    notify: {on: [failed], webhook: %q}
`, target, hooks.URL+"/notify") + sqlJob)
		c.cli("migrate") // a new data_dir on SQLite
		c.start("a")
		for _, job := range jobs {
			c.wait("2 failed slots of "+job+", each notified", func() bool {
				failed := 0
				for _, r := range c.history(job) {
					if r.Status == scheduler.StatusFailed {
						failed++
					}
				}
				notified := 0
				for key := range hooks.received() {
					if strings.HasPrefix(key, "notify."+job+".") {
						notified++
					}
				}
				return failed >= 2 && notified >= 2
			})
		}
		for key, bodies := range hooks.received() {
			var rep struct{ Error string }
			if err := json.Unmarshal([]byte(bodies[0]), &rep); err != nil || len(rep.Error) < 100 || len(rep.Error) > 4096 {
				t.Fatalf("notification %s: error of %d bytes (%v), want the start of the error, cut short", key, len(rep.Error), err)
			}
		}
	})
}
