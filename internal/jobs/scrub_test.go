package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
	"scheduler/internal/testenv"
)

func TestRunner_ScrubsOutcome(t *testing.T) {
	const secret = "hunter2"
	exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) {
		return "DSN=postgres://u:" + secret + "@db/app", scheduler.Permanent(errors.New("exit: saw " + secret))
	})
	h := &harness{t: t, clock: newFakeClock(t0.Add(30 * time.Second)), ledger: newFakeLedger()}
	r := mustNew(t, []Spec{spec(t, "leaky", exec, nil)}, Options{Node: "n1", Ledger: h.ledger, Clock: h.clock,
		Scrub: func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }})
	h.runner = r
	h.lead(token)
	h.advance(time.Minute, 1)
	rows := h.waitRows("leaky", "failed run", func(r []ledgerRow) bool { return count(r, scheduler.StatusFailed) == 1 })
	c := rows[len(rows)-1].Completion
	if strings.Contains(c.Output+c.Error, secret) {
		t.Fatalf("output=%q error=%q, want the secret scrubbed", c.Output, c.Error)
	}
	if c.Output != "DSN=postgres://u:[redacted]@db/app" || !strings.Contains(c.Error, "saw [redacted]") {
		t.Fatalf("output=%q error=%q, want [redacted] in place of the secret", c.Output, c.Error)
	}
}

func TestRunner_ScrubsRetryLog(t *testing.T) {
	const secret = "hunter2"
	exec := execFunc(func(context.Context, scheduler.Attempt) (string, error) {
		return "", errors.New("connect with " + secret + ": refused")
	})
	core, logs := observer.New(zap.InfoLevel)
	h := &harness{t: t, clock: newFakeClock(t0.Add(30 * time.Second)), ledger: newFakeLedger()}
	r := mustNew(t, []Spec{spec(t, "leaky", exec, func(s *Spec) { s.Retries = 1 })}, Options{Node: "n1", Ledger: h.ledger,
		Clock: h.clock, Logger: zap.New(core), Scrub: func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }})
	h.runner = r
	h.lead(token)
	h.advance(time.Minute, 1)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, "the retry line", func() bool { return logs.FilterMessage("attempt failed; retrying").Len() == 1 })
	for _, e := range logs.All() {
		for k, v := range e.ContextMap() {
			if s, ok := v.(string); ok && strings.Contains(s, secret) {
				t.Fatalf("line %q: field %s=%q shows the secret", e.Message, k, s)
			}
		}
	}
	if got := logs.FilterMessage("attempt failed; retrying").All()[0].ContextMap()["error"]; got != "connect with [redacted]: refused" {
		t.Fatalf("error field %q, want the secret [redacted]", got)
	}
}
