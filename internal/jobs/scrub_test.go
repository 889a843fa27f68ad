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
	"scheduler/internal/kinds"
	"scheduler/internal/runlog"
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

// TestRunner_ScrubsSecretAcrossTheCut: an exec job prints the daemon's secret where its stored
// output's head ends and again where its tail starts. With the daemon's scrub and run log, the
// ledger gets the excerpt of the output scrubbed whole: no part of the secret is kept at either
// edge of the cut.
func TestRunner_ScrubsSecretAcrossTheCut(t *testing.T) {
	const secret = "adm1n-T0ken-0123456789abcdef"
	scrub := strings.NewReplacer(secret, "[redacted]").Replace
	half := kinds.DefaultOutputLimit / 2
	// 10 bytes of the secret before the head's end, 18 after the tail's start.
	text := strings.Repeat("x", half-10) + secret + strings.Repeat("y", 3000) + secret + strings.Repeat("z", half-18)
	exec, err := kinds.NewExec(kinds.ExecConfig{Command: []string{"/bin/sh", "-c", `printf %s "$TEXT"`},
		Env: map[string]string{"TEXT": text}, Environ: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, clock: newFakeClock(t0.Add(30 * time.Second)), ledger: newFakeLedger()}
	h.runner = mustNew(t, []Spec{spec(t, "leaky", exec, nil)}, Options{Node: "n1", Ledger: h.ledger, Clock: h.clock,
		Scrub: scrub, Live: runlog.New(nil, runlog.Fixed{Func: scrub})})
	h.lead(token)
	h.advance(time.Minute, 1)
	rows := h.waitRows("leaky", "succeeded run", func(r []ledgerRow) bool { return count(r, scheduler.StatusSucceeded) == 1 })
	got := rows[len(rows)-1].Completion.Output
	for _, part := range []string{secret[:10], secret[len(secret)-18:]} {
		if strings.Contains(got, part) {
			t.Fatalf("stored output keeps %q of the secret:\n%s", part, got)
		}
	}
	if want := kinds.Excerpt(scrub(text), 0); got != want {
		t.Fatalf("stored output %q, want the excerpt of the output scrubbed whole, %q", got, want)
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
