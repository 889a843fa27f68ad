package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

func TestRunner_ScrubsOutcome(t *testing.T) {
	const secret = "hunter2"
	exec := execFunc(func(context.Context, Run) (string, error) {
		return "DSN=postgres://u:" + secret + "@db/app", Permanent(errors.New("exit: saw " + secret))
	})
	h := &harness{t: t, clock: newFakeClock(t0.Add(30 * time.Second)), ledger: newFakeLedger()}
	r, err := New([]Spec{spec(t, "leaky", exec, nil)}, Options{Node: "n1", Ledger: h.ledger, Clock: h.clock,
		Logger: zaptest.NewLogger(t), Scrub: func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }})
	if err != nil {
		t.Fatal(err)
	}
	h.runner = r
	h.lead(token)
	h.advance(time.Minute, 1)
	rows := h.waitRows("leaky", "failed run", func(r []ledgerRow) bool { return count(r, StatusFailed) == 1 })
	c := rows[len(rows)-1].Completion
	if strings.Contains(c.Output+c.Error, secret) {
		t.Fatalf("output=%q error=%q, want the secret scrubbed", c.Output, c.Error)
	}
	if c.Output != "DSN=postgres://u:[redacted]@db/app" || !strings.Contains(c.Error, "saw [redacted]") {
		t.Fatalf("output=%q error=%q, want [redacted] in place of the secret", c.Output, c.Error)
	}
}
