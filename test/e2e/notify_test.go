package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// notifyJob fails every slot, after a retry, and notifies by e-mail and webhook.
const notifyJob = "flaky"

// failureNotifications: three replicas run a job that fails every slot; its leader is killed
// (SIGKILL) in the middle of a run, and the next leader runs that slot again. Every slot the
// ledger has failed must be notified by one e-mail (one distinct Message-ID) at a real SMTP
// server and one webhook (one distinct Idempotency-Key) at a real HTTP server, and nothing else
// notified; deliveries received more than once, which the outbox's guarantee allows, are
// counted.
func (s *suite) failureNotifications(t *testing.T) {
	smtp := testenv.MustSMTP(t, testenv.SMTPOptions{})
	hooks := testenv.MustReceiver(t, http.StatusOK, "")
	jobs := fmt.Sprintf(`  - name: %s
    schedule: "@every 2s"
    type: exec
    command: [/bin/sh, -c, "echo attempt $SCHEDULER_ATTEMPT; sleep 0.4; echo disk full >&2; exit 3"]
    retries: 1
    retry_backoff: 100ms
    timeout: 30s
    misfire: all
    catchup: 1m
    notify: {on: [failed, missed], email: [ops@example.test], webhook: %q}
outbox: {smtp: {addr: %q, from: scheduler@example.test, tls: none}, retry_backoff: 500ms, webhook: {hosts: [127.0.0.1]}}
`, notifyJob, hooks.URL+"/notify", smtp.Addr)
	d := s.deploy(t, deployOptions{jobs: jobs})
	d.startAll()
	first := d.waitLeader(0, 30*time.Second)
	failedSince := func(tok int64) int {
		snap, err := d.trySnapshot()
		if err != nil {
			return 0
		}
		n := 0
		for _, r := range snap.slotRuns(notifyJob) {
			if r.Status == "failed" && r.Token >= tok {
				n++
			}
		}
		return n
	}
	testenv.Eventually(t, 40*time.Second, poll, "2 failed slots", func() bool { return failedSince(first.token) >= 2 })
	run := d.waitRunStarted(notifyJob, time.Now(), 30*time.Second)
	old, ok := d.termOf(run.token)
	if !ok {
		t.Fatalf("the run of slot %s started under token %d, which no replica held", stamp(run.slot), run.token)
	}
	sleepUntil(run.at.Add(200 * time.Millisecond))
	d.signal(old.node, syscall.SIGKILL)
	next := d.waitLeader(old.token, 30*time.Second)
	fin := d.waitFinished(notifyJob, run.slot, 40*time.Second)
	testenv.Eventually(t, 40*time.Second, poll, "2 failed slots under the next leader", func() bool { return failedSince(next.token) >= 2 })
	d.cli("pause", notifyJob)
	testenv.Eventually(t, 40*time.Second, poll, "every notification delivered", func() bool {
		snap, err := d.trySnapshot()
		if err != nil {
			return false
		}
		for _, r := range snap.slotRuns(notifyJob) {
			if r.Status == "running" {
				return false
			}
		}
		waiting, err := d.undelivered()
		return err == nil && waiting == 0
	})
	snap := d.snapshot()
	notified := map[string]string{} // key part of each slot that must notify -> its slot
	for slot, r := range snap.slotRuns(notifyJob) {
		if r.Status == "failed" || r.Status == "missed" {
			notified[fmt.Sprintf("notify.%s.%d.%s.", notifyJob, slot.UnixMicro(), r.Status)] = stamp(slot)
		}
	}
	mails := map[string]int{} // Message-ID -> receptions
	for _, m := range smtp.Messages() {
		mails[m.MessageID]++
	}
	hookKeys := hooks.Keys()
	dups := 0
	for part, slot := range notified {
		var ids, keys []string
		for id, n := range mails {
			if strings.Contains(id, part) {
				ids = append(ids, id)
				dups += n - 1
			}
		}
		for k, n := range hookKeys {
			if strings.HasPrefix(k, part) {
				keys = append(keys, k)
				dups += n - 1
			}
		}
		if len(ids) != 1 || len(keys) != 1 {
			t.Errorf("slot %s: %d distinct e-mails %v and %d distinct webhooks %v, want one each", slot, len(ids), ids, len(keys), keys)
		}
	}
	for id := range mails {
		if !notifiesOne(id, notified) {
			t.Errorf("e-mail %s notifies no failed or missed slot of the ledger", id)
		}
	}
	for k := range hookKeys {
		if !notifiesOne(k, notified) {
			t.Errorf("webhook %s notifies no failed or missed slot of the ledger", k)
		}
	}
	if fin.Status != "failed" || fin.Token < next.token {
		t.Errorf("the slot cut off by the kill: %+v, want failed by the next leader (token >= %d)", fin, next.token)
	}
	t.Logf("notifications: %d slots notified, each by one distinct e-mail and webhook; %d deliveries received more than once; "+
		"the slot cut off by the kill of %s (token %d) was run again and notified by %s (token %d)",
		len(notified), dups, old.node, old.token, fin.Node, fin.Token)
}

// notifiesOne reports whether key is a notification of one of the slots of notified.
func notifiesOne(key string, notified map[string]string) bool {
	for part := range notified {
		if strings.Contains(key, part) {
			return true
		}
	}
	return false
}
