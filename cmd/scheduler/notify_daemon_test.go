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

// TestDaemon_NotifiesDeadMessagesOncePerSlot: a job whose e-mails go dead (the SMTP server
// refuses their recipients) notifies once per slot, however many of its messages died, and a
// notification is never notified of itself.
func TestDaemon_NotifiesDeadMessagesOncePerSlot(t *testing.T) {
	smtp := testenv.MustSMTP(t, testenv.SMTPOptions{Refuse: func(rcpt string) (int, string) {
		if strings.HasPrefix(rcpt, "gone") {
			return 550, "no such user"
		}
		return 0, ""
	}})
	forEachDaemonStore(t, "", func(t *testing.T, c *cluster) {
		before := len(smtp.Messages())
		c.writeConfig(fmt.Sprintf(`
outbox: {smtp: {addr: %q, from: scheduler@example.test, tls: none}, retry_backoff: 100ms}
jobs:
  - name: invoices
    schedule: "@every 2s"
    type: builtin
    builtin: invoices
    params: {clients: 2, period: slot, email_to: "gone-{client}@example.test"}
    notify: {on: [dead], email: [ops@example.test, gone-ops@example.test]}
`, smtp.Addr))
		c.cli("migrate")
		c.start("a")
		dead := func() []messageJSON {
			var ms []messageJSON
			_ = json.Unmarshal([]byte(c.cli("outbox", "--json", "--status", "dead", "--limit", "1000")), &ms)
			return ms
		}
		c.wait("the invoices of 2 slots dead", func() bool {
			slots := map[string]bool{}
			for _, m := range dead() {
				if !strings.HasPrefix(m.Key, "notify.") {
					slots[m.ScheduledAt.String()] = true
				}
			}
			return len(slots) >= 2
		})
		c.cli("pause", "invoices")
		c.wait("nothing pending", func() bool {
			var ms []messageJSON
			_ = json.Unmarshal([]byte(c.cli("outbox", "--json", "--status", "pending")), &ms)
			var sending []messageJSON
			_ = json.Unmarshal([]byte(c.cli("outbox", "--json", "--status", "sending")), &sending)
			return len(ms) == 0 && len(sending) == 0
		})
		deadSlots := map[string]int{} // invoice e-mails dead, by slot
		deadNotices := 0
		for _, m := range dead() {
			if strings.HasPrefix(m.Key, "notify.") {
				deadNotices++ // the notification to gone-ops
				continue
			}
			deadSlots[m.ScheduledAt.UTC().Format("2006-01-02T15:04:05Z")]++
		}
		perSlot := map[string]int{}
		for _, m := range smtp.Messages()[before:] {
			if strings.Contains(m.MessageID, "notify.invoices.") {
				if len(m.To) != 1 || m.To[0] != "ops@example.test" || !strings.Contains(m.Body, "no such user") {
					t.Errorf("notification %+v", m)
				}
				for slot := range deadSlots {
					if strings.Contains(m.Body, slot) {
						perSlot[slot]++
					}
				}
			}
		}
		for slot, n := range deadSlots {
			if n != 2 || perSlot[slot] != 1 {
				t.Errorf("slot %s: %d invoice e-mails dead, %d notifications; want 2 and 1", slot, n, perSlot[slot])
			}
		}
		if deadNotices != len(deadSlots) {
			t.Errorf("%d dead notifications to gone-ops for %d slots, want one each and none notified again", deadNotices, len(deadSlots))
		}
	})
}
