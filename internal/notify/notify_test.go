package notify

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"scheduler"
)

var slot = time.Date(2026, 5, 4, 3, 0, 0, 0, time.UTC)

func failedRun() scheduler.Run {
	return scheduler.Run{RunID: 7, Job: "backup", ScheduledAt: slot, Status: scheduler.StatusFailed, Token: 42, Node: "n1",
		Attempt: 3, Error: "exit status 1", Output: "starting\ndisk full\n"}
}

var policy = Policy{Job: "backup", On: []Event{Failed, Missed}, Email: []string{"ops@example.test", "dev@example.test"},
	Webhook: "https://hooks.example.test/x", After: 2}

// keyRE is the outbox's key pattern.
var keyRE = regexp.MustCompile(`^[A-Za-z0-9_~/+=-]+(\.[A-Za-z0-9_~/+=-]+)*$`)

// TestPolicy_Notice: which outcomes notify, and what the notice holds.
func TestPolicy_Notice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      Policy
		status scheduler.Status
		want   int // messages; 0: no notice
	}{
		{"Failed", policy, scheduler.StatusFailed, 3},
		{"Missed", policy, scheduler.StatusMissed, 3},
		{"FencedNotListed", policy, scheduler.StatusFenced, 0},
		{"Succeeded", policy, scheduler.StatusSucceeded, 0},
		{"Skipped", policy, scheduler.StatusSkipped, 0},
		{"NoDestination", Policy{Job: "backup", On: []Event{Failed}}, scheduler.StatusFailed, 0},
		{"NoEvents", Policy{Job: "backup", Email: []string{"a@example.test"}}, scheduler.StatusFailed, 0},
		{"WebhookOnly", Policy{Job: "backup", On: []Event{Fenced}, Webhook: "http://h.example.test/"}, scheduler.StatusFenced, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := failedRun()
			r.Status = tc.status
			n := tc.p.Notice(r)
			if tc.want == 0 {
				if n != nil {
					t.Fatalf("notice %+v, want none", n)
				}
				return
			}
			if n == nil || len(n.Messages) != tc.want || n.After != tc.p.After {
				t.Fatalf("notice %+v, want %d messages, after %d", n, tc.want, tc.p.After)
			}
			for _, m := range n.Messages {
				if !keyRE.MatchString(m.Key) || len(m.Key) > 200 || !strings.HasPrefix(m.Key, KeyPrefix+"backup.") {
					t.Fatalf("key %q: not an outbox key of the job", m.Key)
				}
			}
		})
	}
}

// TestPolicy_NoticeContent: the e-mail and the webhook report the job, slot, event, reason,
// attempt, token, node and the output's end; the webhook's body is JSON.
func TestPolicy_NoticeContent(t *testing.T) {
	n := policy.Notice(failedRun())
	mail, hook := n.Messages[0], n.Messages[2]
	for _, want := range []string{"backup", "2026-05-04T03:00:00Z", "failed", "exit status 1", "Attempt: 3", "Token:   42", "Node:    n1", "disk full"} {
		if !strings.Contains(mail.Body, want) {
			t.Errorf("e-mail body lacks %q:\n%s", want, mail.Body)
		}
	}
	if mail.Kind != scheduler.MessageEmail || mail.Destination != "ops@example.test" || !strings.Contains(mail.Subject, "backup failed") {
		t.Errorf("e-mail %+v", mail)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(hook.Body), &rep); err != nil {
		t.Fatalf("webhook body %q: %v", hook.Body, err)
	}
	if hook.Kind != scheduler.MessageWebhook || rep["job"] != "backup" || rep["event"] != "failed" || rep["token"] != 42.0 ||
		rep["attempt"] != 3.0 || rep["node"] != "n1" || rep["slot"] != "2026-05-04T03:00:00Z" || !strings.Contains(rep["output_tail"].(string), "disk full") {
		t.Errorf("webhook report %v", rep)
	}
}

// TestPolicy_KeyOncePerSlot: the keys depend on the slot, the event and the destination only:
// another term, attempt or output of the same slot makes the same keys; another slot, a manual
// run or another destination makes others.
func TestPolicy_KeyOncePerSlot(t *testing.T) {
	keys := func(r scheduler.Run, p Policy) []string {
		var ks []string
		for _, m := range p.Notice(r).Messages {
			ks = append(ks, m.Key)
		}
		return ks
	}
	a := failedRun()
	b := a
	b.Token, b.Attempt, b.Node, b.Output, b.RunID = 43, 1, "n2", "other", 8
	if ka, kb := keys(a, policy), keys(b, policy); strings.Join(ka, " ") != strings.Join(kb, " ") {
		t.Fatalf("redo of the slot: keys %v, want %v", kb, ka)
	}
	c := a
	c.ScheduledAt = slot.Add(time.Minute)
	m := a
	m.Manual = true
	seen := map[string]bool{}
	for _, k := range append(append(keys(a, policy), keys(c, policy)...), keys(m, policy)...) {
		if seen[k] {
			t.Fatalf("key %q made twice for different slots or destinations", k)
		}
		seen[k] = true
	}
	long := a
	long.Job = strings.Repeat("j", 199)
	for _, k := range keys(long, Policy{On: []Event{Failed}, Email: []string{"a@example.test"}}) {
		if len(k) > 200 || !keyRE.MatchString(k) {
			t.Fatalf("key of a long job name %q: not an outbox key", k)
		}
	}
}

// TestTail: the end of the output, bounded, cut on a character, storable.
func TestTail(t *testing.T) {
	out := strings.Repeat("é", MaxOutputTail) + "\x00end\xff"
	got := Tail(out)
	if len(got) > MaxOutputTail+8 || !strings.HasSuffix(got, "\uFFFDend\uFFFD") || strings.ContainsRune(got, 0) {
		t.Fatalf("tail of %d bytes ends %q", len(got), got[len(got)-12:])
	}
	if Tail("short") != "short" {
		t.Fatal("a short output is kept whole")
	}
}

// TestPolicy_DeadNotice: a dead message of the job notifies when dead is listed, never for a
// notification itself, and once per slot whatever message died.
func TestPolicy_DeadNotice(t *testing.T) {
	p := Policy{Job: "invoices", On: []Event{Dead}, Email: []string{"ops@example.test"}, After: 3}
	m := scheduler.Message{Key: "invoice.invoices.1.7", Job: "invoices", ScheduledAt: slot, Destination: "client-7@example.test", Attempts: 10}
	n := p.DeadNotice(m, "550 no such user", 42, "n1")
	if n == nil || len(n.Messages) != 1 || n.After != 0 || !strings.Contains(n.Messages[0].Body, "550 no such user") {
		t.Fatalf("notice %+v, want one e-mail with the error, counted by no streak", n)
	}
	other := m
	other.Key = "invoice.invoices.1.8"
	if k := p.DeadNotice(other, "550", 42, "n1").Messages[0].Key; k != n.Messages[0].Key {
		t.Fatalf("key %q for another dead message of the slot, want %q", k, n.Messages[0].Key)
	}
	self := m
	self.Key = n.Messages[0].Key
	if p.DeadNotice(self, "550", 42, "n1") != nil {
		t.Fatal("a dead notification notified")
	}
	if (Policy{On: []Event{Failed}, Email: []string{"a@example.test"}}).DeadNotice(m, "x", 1, "n") != nil {
		t.Fatal("dead notified while not listed")
	}
}

// TestPolicy_NoticeBoundsItsText: an error or reason of megabytes (an http job's status line, a
// SQL error, a dead message's last reply) is cut to MaxText at a character, so that the notice
// stays within the outbox's bound of a message body and the outcome it is written with can be
// recorded.
func TestPolicy_NoticeBoundsItsText(t *testing.T) {
	huge := strings.Repeat("é", 2<<20)
	r := failedRun()
	r.Error, r.Reason = huge, huge
	m := scheduler.Message{Key: "backup.1", Job: "backup", Kind: scheduler.MessageWebhook, Destination: "https://x.example.test/",
		ScheduledAt: slot, Attempts: 3}
	dead := Policy{Job: "backup", On: []Event{Dead}, Email: []string{"ops@example.test"}, Webhook: "https://hooks.example.test/x"}
	// The error and the reason, each cut to 4 KiB, with the rest of the report.
	const bound = 3 * 4096
	for name, n := range map[string]*scheduler.Notice{"Failed": policy.Notice(r), "Dead": dead.DeadNotice(m, huge, 42, "n1")} {
		t.Run(name, func(t *testing.T) {
			for _, msg := range n.Messages {
				if len(msg.Body) > bound {
					t.Fatalf("%s body of %d bytes, want at most %d", msg.Kind, len(msg.Body), bound)
				}
				if !strings.Contains(msg.Body, "é…") {
					t.Fatalf("%s body lacks the cut mark after a whole character:\n%.300s", msg.Kind, msg.Body)
				}
				if msg.Kind == scheduler.MessageWebhook && !json.Valid([]byte(msg.Body)) {
					t.Fatalf("webhook body is not JSON")
				}
			}
		})
	}
}
