package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"scheduler"
)

// Event is an outcome a job's notifications report.
type Event string

// The events.
const (
	Failed Event = "failed"
	Fenced Event = "fenced"
	Missed Event = "missed"
	Dead   Event = "dead"
)

// Events are the events, in the order the documentation lists them.
var Events = []Event{Failed, Fenced, Missed, Dead}

// KeyPrefix starts the key of every notification message.
const KeyPrefix = "notify."

// MaxOutputTail is how much of the end of a run's output a notification carries, in bytes.
const MaxOutputTail = 2048

// MaxText is how much of a run's error and reason a notification carries, in bytes. A receiver
// or a job chooses that text (an http job's status line, a SQL error), and a notification must
// stay within the outbox's bound of a message: one above it could not be queued, and neither
// could the outcome it is written with.
const MaxText = 4096

// Policy is a job's notifications: on which events, to whom.
type Policy struct {
	// Job is the job's name.
	Job string
	// On are the events that notify.
	On []Event
	// Email are the addresses each notification is mailed to.
	Email []string
	// Webhook is the URL each notification is posted to, as JSON; empty: none.
	Webhook string
	// After notifies only the After-th consecutive failure; 0: every one.
	After int
}

// Enabled reports whether p notifies anyone of anything.
func (p Policy) Enabled() bool {
	return len(p.On) > 0 && (len(p.Email) > 0 || p.Webhook != "")
}

// Hook returns Notice as the runner's hook (jobs.Spec.Notify), or nil when p notifies no one.
func (p Policy) Hook() func(scheduler.Run) *scheduler.Notice {
	if !p.Enabled() {
		return nil
	}
	return p.Notice
}

// EventOf returns the event of a run's final status, or "" when the status is none.
func EventOf(s scheduler.Status) Event {
	switch s {
	case scheduler.StatusFailed:
		return Failed
	case scheduler.StatusFenced:
		return Fenced
	case scheduler.StatusMissed:
		return Missed
	}
	return ""
}

// Notice returns the notice of r's final outcome, or nil when p does not notify it. r carries
// what the notification reports: the slot, the status, its reason, error and output, the
// attempt, and the token and node of the term that writes it.
func (p Policy) Notice(r scheduler.Run) *scheduler.Notice {
	ev := EventOf(r.Status)
	if ev == "" || !p.Enabled() || !slices.Contains(p.On, ev) {
		return nil
	}
	return p.notice(ev, report{
		Event: ev, Job: r.Job, Slot: r.ScheduledAt.UTC(), Manual: r.Manual, Status: r.Status,
		Reason: head(r.Reason), Error: head(r.Error), Attempt: r.Attempt, Token: r.Token, Node: r.Node, RunID: r.RunID,
		OutputTail: Tail(r.Output),
	}, r.Key())
}

// DeadNotice returns the notice that m, a message of the job's slot, went dead with lastErr,
// or nil when p does not notify dead messages or m is itself a notification. The slot's
// notifications share one key per destination, so a slot whose many messages go dead notifies
// once.
func (p Policy) DeadNotice(m scheduler.Message, lastErr string, token int64, node string) *scheduler.Notice {
	if !p.Enabled() || !slices.Contains(p.On, Dead) || strings.HasPrefix(m.Key, KeyPrefix) {
		return nil
	}
	return p.notice(Dead, report{
		Event: Dead, Job: m.Job, Slot: m.ScheduledAt.UTC(), Manual: m.Manual,
		Reason: head(fmt.Sprintf("message %s to %s went dead after %d attempts", m.Key, m.Destination, m.Attempts)),
		Error:  head(lastErr), Token: token, Node: node, Message: m.Key,
	}, scheduler.SlotKey{Job: m.Job, At: m.ScheduledAt, Manual: m.Manual})
}

// report is what a notification says; it is the webhook's JSON body.
type report struct {
	Event      Event            `json:"event"`
	Job        string           `json:"job"`
	Slot       time.Time        `json:"slot"`
	Manual     bool             `json:"manual"`
	Status     scheduler.Status `json:"status,omitempty"`
	Reason     string           `json:"reason"`
	Error      string           `json:"error"`
	Attempt    int              `json:"attempt"`
	Token      int64            `json:"token"`
	Node       string           `json:"node"`
	RunID      int64            `json:"run_id,omitempty"`
	Message    string           `json:"message,omitempty"` // the dead message's key
	OutputTail string           `json:"output_tail"`
}

// notice makes the messages of rep, one per destination, keyed by the slot and the event.
func (p Policy) notice(ev Event, rep report, slot scheduler.SlotKey) *scheduler.Notice {
	base := Key(slot, ev)
	n := &scheduler.Notice{After: p.After}
	if ev == Dead {
		n.After = 0 // a dead message is no failure of a run: the count is the runs'
	}
	subject := fmt.Sprintf("scheduler: job %s %s at %s", rep.Job, ev, rep.Slot.Format(time.RFC3339))
	body := rep.text()
	for _, to := range p.Email {
		n.Messages = append(n.Messages, scheduler.Message{Key: base + "." + destHash("email", to),
			Kind: scheduler.MessageEmail, Destination: to, Subject: subject, Body: body})
	}
	if p.Webhook != "" {
		js, _ := json.Marshal(rep) // a struct of plain fields: it cannot fail
		n.Messages = append(n.Messages, scheduler.Message{Key: base + "." + destHash("webhook", p.Webhook),
			Kind: scheduler.MessageWebhook, Destination: p.Webhook, Subject: subject, Body: string(js)})
	}
	return n
}

// Key is the part of a notification's key that names its slot and event:
// notify.JOB.SLOT.EVENT, SLOT the slot's Unix microseconds, with an m for a manual one.
func Key(slot scheduler.SlotKey, ev Event) string {
	at := strconv.FormatInt(slot.At.UnixMicro(), 10)
	if slot.Manual {
		at += "m"
	}
	job := slot.Job
	if len(job) > maxKeyJob {
		job = "h" + destHash("job", job) // the key stays within the outbox's bound
	}
	return KeyPrefix + job + "." + at + "." + string(ev)
}

// maxKeyJob is the longest job name a key spells out; with the prefix, the slot, the event and
// the destination's hash the key stays within the outbox's 200 characters.
const maxKeyJob = 120

// destHash names a destination in a key, short and stable whatever the order of the list.
func destHash(kind, dest string) string {
	sum := sha256.Sum256([]byte(kind + ":" + dest))
	return hex.EncodeToString(sum[:6])
}

// text is the e-mail's body.
func (r report) text() string {
	var b strings.Builder
	slot := r.Slot.Format(time.RFC3339)
	if r.Manual {
		slot += " (manual)"
	}
	fmt.Fprintf(&b, "Job:     %s\nSlot:    %s\nEvent:   %s\n", r.Job, slot, r.Event)
	for _, f := range []struct{ name, v string }{{"Reason", r.Reason}, {"Error", r.Error}, {"Message", r.Message}} {
		if f.v != "" {
			fmt.Fprintf(&b, "%-8s %s\n", f.name+":", f.v)
		}
	}
	if r.Attempt > 0 {
		fmt.Fprintf(&b, "Attempt: %d\n", r.Attempt)
	}
	fmt.Fprintf(&b, "Token:   %d\nNode:    %s\n", r.Token, r.Node)
	if r.RunID != 0 {
		fmt.Fprintf(&b, "Run:     %d\n", r.RunID)
	}
	if r.OutputTail != "" {
		fmt.Fprintf(&b, "\nThe end of the output:\n%s\n", r.OutputTail)
	}
	return b.String()
}

// Tail returns the end of output, at most MaxOutputTail bytes of whole characters, as storable
// text (no NUL, valid UTF-8).
func Tail(output string) string {
	if len(output) > MaxOutputTail {
		output = output[len(output)-MaxOutputTail:]
		for len(output) > 0 && !utf8.RuneStart(output[0]) {
			output = output[1:]
		}
	}
	return clean(output)
}

// head returns the start of s, at most MaxText bytes of whole characters ("…" marking a cut),
// as storable text.
func head(s string) string {
	s = clean(s)
	if len(s) <= MaxText {
		return s
	}
	cut := MaxText - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// clean makes s storable as message text: valid UTF-8, without NUL.
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
