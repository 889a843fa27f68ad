package kinds

import (
	"context"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"scheduler"
)

// insertInvoice bills one client for one period. Portable: it runs as it is on Postgres and on
// SQLite. The table is named without a schema: public on Postgres (the default search_path).
const insertInvoice = `INSERT INTO invoices (client_id, month, amount, token) VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING`

// InvoicesJob is the invoices builtin: it bills clients 1..Clients for the period of the slot, one
// fenced transaction per client, in order, Delay apart.
//
// The period is the slot's month, YYYY-MM in the slot's own time zone (the runner gives slots in
// the job's zone, so a 00:30 Europe/Berlin run on the 1st bills the new month), or with Period
// "slot" the slot's time, RFC 3339 in UTC. Each client's amount is 100.00 + its id.
//
// A redo of a slot is harmless: an invoice that exists is left alone (ON CONFLICT DO NOTHING) and
// counted as already billed. The first fenced transaction raises the job's fence to the run's
// token before its write (the runner has already raised every job's fence when its term began),
// so once a newer leader has written, the older one's next transaction is rejected: the run stops
// at the first rejected client with an error wrapping scheduler.ErrFenced.
//
// With EmailTo set, the transaction that writes a new invoice also queues its e-mail in the
// outbox (Attempt.Enqueue), under a key stable for the job, slot and client: the e-mail commits
// with its invoice or not at all, so each invoice row has exactly one e-mail, which the leader's
// dispatcher delivers. An invoice already billed queues nothing.
//
// The output is "billed N of M clients (K already billed)", N counting the clients whose
// transaction committed, those already billed included; with EmailTo, ", Q e-mails queued".
type InvoicesJob struct {
	p InvoicesParams
}

// NewInvoices checks p (InvoicesParams.Check) and returns the job billing with it (see
// ParseInvoicesParams). Its writes go through each attempt's fenced transaction. Every problem
// is reported, joined, each a Problem.
func NewInvoices(p InvoicesParams) (*InvoicesJob, error) {
	if err := refusal(p.Check()); err != nil {
		return nil, err
	}
	return &InvoicesJob{p: p}, nil
}

// Period returns the value written to invoices.month for a slot.
func (j *InvoicesJob) Period(slot time.Time) string {
	if j.p.Period == "slot" {
		return slot.UTC().Format(time.RFC3339)
	}
	return slot.Format("2006-01")
}

// Execute bills the clients once for run; see InvoicesJob.
func (j *InvoicesJob) Execute(ctx context.Context, run scheduler.Attempt) (string, error) {
	period := j.Period(run.Slot)
	billed, already, queued := 0, 0, 0
	summary := func() string {
		s := fmt.Sprintf("billed %d of %d clients (%d already billed)", billed, j.p.Clients, already)
		if j.p.EmailTo != "" {
			s += fmt.Sprintf(", %d e-mails queued", queued)
		}
		return s
	}
	for id := 1; id <= j.p.Clients; id++ {
		if id > 1 && j.p.Delay > 0 {
			if err := pause(ctx, j.p.Delay); err != nil {
				return summary(), fmt.Errorf("invoices for %s: stopped before client %d: %w", period, id, err)
			}
		}
		if err := ctx.Err(); err != nil {
			return summary(), fmt.Errorf("invoices for %s: stopped before client %d: %w", period, id, err)
		}
		amount := fmt.Sprintf("%d.00", 100+id)
		var n int64
		var q bool
		err := run.Fenced(ctx, func(ctx context.Context, tx scheduler.Tx) error {
			var err error
			n, q = 0, false
			if n, err = tx.Exec(ctx, insertInvoice, id, period, amount, run.Token); err != nil || n == 0 || j.p.EmailTo == "" {
				return err
			}
			q, err = run.Enqueue(ctx, tx, j.email(run, id, period, amount))
			return err
		})
		if err != nil {
			return summary(), fmt.Errorf("bill client %d for %s with token %d: %w", id, period, run.Token, err)
		}
		billed++
		if n == 0 {
			already++
		}
		if q {
			queued++
		}
	}
	return summary(), nil
}

// email is the e-mail of client id's invoice for period, keyed by the run's job, slot and the
// client, so that a redo of the slot finds it queued.
func (j *InvoicesJob) email(run scheduler.Attempt, id int, period, amount string) scheduler.Message {
	key := fmt.Sprintf("invoice.%s.%d.%d", run.Job, run.Slot.UTC().UnixMicro(), id)
	if run.Manual {
		key += ".manual"
	}
	return scheduler.Message{
		Key:         key,
		Kind:        scheduler.MessageEmail,
		Destination: emailTo(j.p.EmailTo, id),
		Subject:     fmt.Sprintf("Invoice %s", period),
		Body:        fmt.Sprintf("Client %d\nPeriod %s\nAmount due: %s\n", id, period, amount),
	}
}

// emailTo is the address of client id from template.
func emailTo(template string, id int) string {
	return strings.ReplaceAll(template, "{client}", strconv.Itoa(id))
}

// checkEmailTo reports what is wrong with an email_to template, "" when nothing is (or it is
// empty).
func checkEmailTo(template string) string {
	if template == "" {
		return ""
	}
	addr := emailTo(template, 1)
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Address != addr || len(addr) > 254 {
		return fmt.Sprintf("must be one e-mail address, {client} standing for the client's id, got %q", template)
	}
	return ""
}

// pause waits d or until ctx is done, whichever comes first, and returns ctx's error then.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
