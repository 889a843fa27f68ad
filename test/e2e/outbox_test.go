package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// outboxWorkload bills ten clients 300 ms apart every ten seconds, and queues one e-mail per
// invoice.
var outboxWorkload = workload{schedule: "@every 10s", every: 10 * time.Second, clients: 10, delay: 300 * time.Millisecond}

// smtpDelay is how long the test's SMTP server takes to answer each MAIL FROM: long enough that
// a leader stopped while it dispatches is often caught inside a delivery.
const smtpDelay = 150 * time.Millisecond

// outboxFaults is the seed's experiment with the e-mails counted at a real SMTP server: three
// replicas bill ten clients per slot with email_to; the leader is frozen (SIGSTOP past the TTL)
// in the middle of billing, then in the middle of dispatching, then killed (SIGKILL) in the
// middle of dispatching. Every invoice row must have its e-mail at the server (one distinct
// Message-ID, the invoice's key) and no e-mail may go to a client without an invoice; the
// e-mails received more than once, which the guarantee allows (a leader stopped between the
// server's acceptance and the fenced record of it), are counted, and the window between the
// acceptance and the record is measured: see RELIABILITY.md.
func (s *suite) outboxFaults(t *testing.T) {
	smtp := testenv.MustSMTP(t, testenv.SMTPOptions{Delay: smtpDelay})
	w := outboxWorkload
	// outbox is a top-level section: written after the jobs list, it ends that list.
	jobs := fmt.Sprintf(`  - name: %s
    schedule: %q
    type: builtin
    builtin: invoices
    params: {clients: %d, delay: %s, period: slot, email_to: "client-{client}@example.test"}
    overlap: queue
    timeout: 1m
outbox: {smtp: {addr: %q, from: billing@example.test, tls: none}, retry_backoff: 1s}
`, invoicesJob, w.schedule, w.clients, w.delay, smtp.Addr)
	d := s.deploy(t, deployOptions{jobs: jobs})
	d.startAll()
	d.waitLeader(0, 30*time.Second)
	last := time.Now()
	trials := []struct {
		name            string
		crash, dispatch bool
	}{
		{"FrozenMidBilling", false, false},
		{"FrozenMidDispatch", false, true},
		{"KilledMidDispatch", true, true},
	}
	// One round by default, to keep the suite short; -e2e.repeat above 2 runs that many.
	rounds := 1
	if s.reps > 2 {
		rounds = s.reps
	}
	for round := 1; round <= rounds; round++ {
		for _, tr := range trials {
			last = s.outboxFault(t, d, smtp, w, tr.name, round, last, tr.crash, tr.dispatch)
		}
	}
	// Stop billing and let the last e-mails go out before the replicas stop.
	d.cli("pause", invoicesJob)
	testenv.Eventually(t, 40*time.Second, poll, "every invoice's e-mail delivered", func() bool {
		snap, err := d.trySnapshot()
		if err != nil {
			return false
		}
		var running bool
		for _, r := range snap.slotRuns(invoicesJob) {
			running = running || r.Status == "running"
		}
		waiting, err := d.undelivered()
		return err == nil && !running && waiting == 0
	})
	snap := d.check(invoicesJob, w.clients)
	got := smtp.Messages()
	dups, problems := checkEmails(snap, got)
	for _, p := range problems {
		t.Error(p)
	}
	window := d.duplicateWindow(got)
	t.Logf("outbox: %d invoice rows, %d e-mails received, %d distinct Message-IDs, %d received more than once; "+
		"acceptance -> fenced record: p50 %s, p99 %s, max %s over %d e-mails",
		len(snap.invoices), len(got), len(got)-dups, dups, pct(window, 50), pct(window, 99), pct(window, 100), len(window))
}

// outboxFault is one trial: it freezes or kills the leader in the middle of the billing of a
// slot after after, or once the SMTP server has received some of that slot's e-mails, and
// waits until every e-mail of the slot has arrived.
func (s *suite) outboxFault(t *testing.T, d *deployment, smtp *testenv.SMTPServer, w workload, name string, rep int,
	after time.Time, crash, dispatch bool) time.Time {
	t.Helper()
	rng := s.rand("Outbox"+name, rep)
	tl := newTimeline(t, fmt.Sprintf("Outbox %s round %d (seed %d)", name, rep, s.seed))
	run, old := d.runUnderLeader(after)
	keys := slotKeys(run.slot, w.clients)
	if dispatch {
		// Stop it at a random point once the server has between 1 and clients-1 of the slot's
		// e-mails: not right at an acceptance, which would aim at the window of a repeat.
		want := 1 + rng.IntN(w.clients-1)
		testenv.Eventually(t, 30*time.Second, 5*time.Millisecond, fmt.Sprintf("%d e-mails of slot %s", want, stamp(run.slot)), func() bool {
			return received(smtp.Messages(), keys) >= want
		})
		time.Sleep(time.Duration(rng.Int64N(int64(w.delay + smtpDelay))))
	} else {
		sleepUntil(run.at.Add(300*time.Millisecond + time.Duration(rng.Int64N(int64(w.runTime()-time.Second)))))
	}
	faultAt := time.Now()
	before := received(smtp.Messages(), keys)
	hold := 2*ttl + time.Duration(rng.Int64N(int64(2*ttl)))
	if crash {
		d.signal(old.node, syscall.SIGKILL)
		tl.start(faultAt, fmt.Sprintf("SIGKILL %s (token %d), %d ms into the run of slot %s, %d of its e-mails received",
			old.node, old.token, ms(faultAt.Sub(run.at)), stamp(run.slot), before))
	} else {
		d.signal(old.node, syscall.SIGSTOP)
		tl.start(faultAt, fmt.Sprintf("SIGSTOP %s (token %d), %d ms into the run of slot %s, %d of its e-mails received, for %d ms",
			old.node, old.token, ms(faultAt.Sub(run.at)), stamp(run.slot), before, ms(hold)))
	}
	next := d.waitLeader(old.token, hold+15*time.Second)
	tl.mark(next.won, "%s wins the election, token %d", next.node, next.token)
	if crash {
		if _, err := d.replicas[old.node].proc.wait(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	} else {
		sleepUntil(faultAt.Add(hold))
		d.signal(old.node, syscall.SIGCONT)
		tl.mark(time.Now(), "SIGCONT %s", old.node)
	}
	fin := d.waitFinished(invoicesJob, run.slot, 40*time.Second)
	if fin.Status != "succeeded" {
		t.Errorf("slot %s: %s under token %d; want succeeded", stamp(run.slot), fin.Status, fin.Token)
	}
	testenv.Eventually(t, 40*time.Second, poll, "every e-mail of slot "+stamp(run.slot), func() bool {
		return received(smtp.Messages(), keys) == len(keys)
	})
	all := 0
	for _, m := range smtp.Messages() {
		if keys[messageKey(m.MessageID)] {
			all++
		}
	}
	tl.figure("emails_distinct", len(keys))
	tl.figure("emails_received", all)
	tl.figure("duplicates", all-len(keys))
	tl.print()
	if crash {
		d.start(old.node)
	}
	return run.slot
}

// slotKeys are the outbox keys of the invoices of slot (the invoices builtin's keys).
func slotKeys(slot time.Time, clients int) map[string]bool {
	keys := map[string]bool{}
	for c := 1; c <= clients; c++ {
		keys[invoiceKey(slot, c)] = true
	}
	return keys
}

func invoiceKey(slot time.Time, client int) string {
	return fmt.Sprintf("invoice.%s.%d.%d", invoicesJob, slot.UTC().UnixMicro(), client)
}

// messageKey is the outbox key of a Message-ID header: <KEY@DOMAIN>.
func messageKey(id string) string {
	key, _, _ := strings.Cut(strings.Trim(id, "<>"), "@")
	return key
}

// received counts the distinct keys of keys among msgs.
func received(msgs []testenv.SMTPMessage, keys map[string]bool) int {
	seen := map[string]bool{}
	for _, m := range msgs {
		if k := messageKey(m.MessageID); keys[k] {
			seen[k] = true
		}
	}
	return len(seen)
}

// checkEmails compares the e-mails received with the invoice rows: each row has exactly one
// distinct Message-ID, sent to its client, and no e-mail has no row. It returns how many
// e-mails repeated a Message-ID received before.
func checkEmails(snap snapshot, msgs []testenv.SMTPMessage) (dups int, problems []string) {
	want := map[string]int{} // key -> client
	for _, i := range snap.invoices {
		slot, err := time.Parse(time.RFC3339, i.Month)
		if err != nil {
			problems = append(problems, fmt.Sprintf("invoice of client %d: period %q is no slot", i.Client, i.Month))
			continue
		}
		want[invoiceKey(slot, i.Client)] = i.Client
	}
	seen := map[string]int{}
	for _, m := range msgs {
		k := messageKey(m.MessageID)
		client, ok := want[k]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("e-mail %s to %v has no invoice row", m.MessageID, m.To))
		case len(m.To) != 1 || m.To[0] != fmt.Sprintf("client-%d@example.test", client):
			problems = append(problems, fmt.Sprintf("e-mail %s went to %v, want client %d", m.MessageID, m.To, client))
		}
		seen[k]++
		if seen[k] > 1 {
			dups++
		}
	}
	for k := range want {
		if seen[k] == 0 {
			problems = append(problems, fmt.Sprintf("invoice %s: no e-mail received", k))
		}
	}
	return dups, problems
}

// undelivered counts the outbox messages not delivered yet.
func (d *deployment) undelivered() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	err := d.db.QueryRow(ctx, `SELECT count(*) FROM scheduler.outbox WHERE status <> 'delivered'`).Scan(&n)
	return n, err
}

// duplicateWindow returns, for each e-mail received, the time from the server's acceptance to
// the fenced record of its delivery (delivered_at, by the store's clock on the same host): a
// leader stopped inside that window leaves the message to be sent again.
func (d *deployment) duplicateWindow(msgs []testenv.SMTPMessage) []time.Duration {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := d.db.Query(ctx, `SELECT key, delivered_at FROM scheduler.outbox WHERE status = 'delivered'`)
	if err != nil {
		d.t.Fatal(err)
	}
	defer rows.Close()
	at := map[string]time.Time{}
	for rows.Next() {
		var k string
		var t time.Time
		if err := rows.Scan(&k, &t); err != nil {
			d.t.Fatal(err)
		}
		at[k] = t
	}
	last := map[string]time.Time{} // the last acceptance of each key: the one recorded
	for _, m := range msgs {
		last[messageKey(m.MessageID)] = m.At
	}
	var out []time.Duration
	for k, acc := range last {
		if rec, ok := at[k]; ok {
			out = append(out, rec.Sub(acc))
		}
	}
	slices.Sort(out)
	return out
}

// pct is the p-th percentile of sorted ds (p 100: the largest).
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := (len(ds)*p + 99) / 100
	return ds[max(0, min(len(ds), i)-1)].Round(10 * time.Microsecond)
}
