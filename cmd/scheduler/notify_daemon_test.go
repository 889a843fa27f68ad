package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"scheduler"
	"scheduler/internal/testenv"
)

// hookReceiver is a real HTTP server that keeps the notifications posted to it.
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies map[string][]string // by Idempotency-Key
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{bodies: map[string][]string{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		h.mu.Lock()
		h.bodies[req.Header.Get("Idempotency-Key")] = append(h.bodies[req.Header.Get("Idempotency-Key")], string(b))
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) received() map[string][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string][]string, len(h.bodies))
	for k, v := range h.bodies {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// notifyJobs is a job failing every second, after a retry, which notifies by e-mail and webhook.
const notifyJobs = `
jobs:
  - name: flaky
    schedule: "* * * * * *"
    type: exec
    command: [/bin/sh, -c, "echo starting; echo disk full >&2; exit 3"]
    retries: 1
    retry_backoff: 10ms
    misfire: skip
    notify: {on: [failed], email: [ops@example.test], webhook: %q}
`

// TestDaemon_NotifiesFailuresOncePerSlot: a failing job's every failed slot is notified once, at
// a real SMTP server and a real HTTP server, with its job, slot, attempt, token, node and the end
// of its output, across a failover from one replica to another; the slots that did not fail
// notify no one.
func TestDaemon_NotifiesFailuresOncePerSlot(t *testing.T) {
	smtp := testenv.MustSMTP(t, testenv.SMTPOptions{})
	hooks := newHookReceiver(t)
	forEachDaemonStore(t, "", func(t *testing.T, c *cluster) {
		before := len(smtp.Messages())
		c.writeConfig(fmt.Sprintf(notifyJobs, hooks.URL+"/notify") + fmt.Sprintf(
			"outbox: {smtp: {addr: %q, from: scheduler@example.test, tls: none}, webhook: {hosts: [127.0.0.1]}, retry_backoff: 100ms}\n", smtp.Addr))
		c.cli("migrate") // a new data_dir on SQLite
		failedBy := func(node string) int {
			n := 0
			for _, r := range c.history("flaky") {
				if r.Status == scheduler.StatusFailed && r.Node == node {
					n++
				}
			}
			return n
		}
		a := c.start("a")
		c.wait("2 failed slots by a", func() bool { return failedBy("a") >= 2 })
		if err := a.stop(t); err != nil {
			t.Fatal(err)
		}
		c.start("b")
		c.wait("2 failed slots by b", func() bool { return failedBy("b") >= 2 })
		c.cli("pause", "flaky")
		c.wait("every notification delivered", func() bool {
			var pending []messageJSON
			_ = json.Unmarshal([]byte(c.cli("outbox", "--json", "--status", "pending")), &pending)
			var sending []messageJSON
			_ = json.Unmarshal([]byte(c.cli("outbox", "--json", "--status", "sending")), &sending)
			runs := c.history("flaky")
			return len(pending) == 0 && len(sending) == 0 && countStatus(runs, scheduler.StatusRunning) == 0
		})
		runs := c.history("flaky")
		failed := map[string]scheduler.Run{} // by the slot's key part
		for _, r := range runs {
			if r.Status == scheduler.StatusFailed {
				failed[fmt.Sprintf(".%d.failed.", r.ScheduledAt.UnixMicro())] = r
			}
		}
		mails := smtp.Messages()[before:]
		perSlot := map[string]int{}
		for _, m := range mails {
			if !strings.Contains(m.MessageID, "notify.flaky.") {
				continue
			}
			found := false
			for part, r := range failed {
				if strings.Contains(m.MessageID, part) {
					found = true
					perSlot[part]++
					for _, want := range []string{"flaky", "failed", r.ScheduledAt.UTC().Format("2006-01-02T15:04:05Z"), "disk full",
						fmt.Sprintf("Attempt: %d", r.Attempt), fmt.Sprintf("Token:   %d", r.Token), "Node:    " + r.Node} {
						if !strings.Contains(m.Body, want) {
							t.Errorf("e-mail %s lacks %q:\n%s", m.MessageID, want, m.Body)
						}
					}
				}
			}
			if !found {
				t.Errorf("e-mail %s notifies no failed slot of the ledger", m.MessageID)
			}
		}
		hooksPerSlot := map[string]int{}
		for key, bodies := range hooks.received() {
			for part := range failed {
				if strings.HasPrefix(key, "notify.flaky.") && strings.Contains(key, part) {
					hooksPerSlot[part] += len(bodies)
					var rep map[string]any
					if err := json.Unmarshal([]byte(bodies[0]), &rep); err != nil || rep["job"] != "flaky" || rep["event"] != "failed" {
						t.Errorf("webhook %s: %s (%v)", key, bodies[0], err)
					}
				}
			}
		}
		for part, r := range failed {
			if perSlot[part] != 1 || hooksPerSlot[part] != 1 {
				t.Errorf("slot %s (attempt %d, token %d, node %s): %d e-mails and %d webhooks, want 1 each",
					r.ScheduledAt, r.Attempt, r.Token, r.Node, perSlot[part], hooksPerSlot[part])
			}
		}
		if len(failed) < 4 {
			t.Fatalf("%d failed slots, want at least 4", len(failed))
		}
	})
}
