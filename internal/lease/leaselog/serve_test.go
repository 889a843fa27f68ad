package leaselog

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
	"scheduler/internal/lease"
)

// TestServe_LogsInTheBackendsWords: a renewal that fails, then finds the hold gone, is logged in
// the backend's words, and the term's end with its reason and lead's error, at warn: the term was
// lost, not ended on purpose.
func TestServe_LogsInTheBackendsWords(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	var h lease.Holding[string]
	gone := errors.New("gone")
	renewals := 0
	renew := func(context.Context) error {
		renewals++
		if renewals == 1 {
			return errors.New("timeout")
		}
		return gone
	}
	term := scheduler.Term{Token: 7, Node: "a", Since: time.Now()}
	leadErr := errors.New("lead failed")
	held := Serve(context.Background(), &h, term, "holder", lease.Events{}, time.Now(),
		lease.Renewal{TTL: 400 * time.Millisecond, Margin: 100 * time.Millisecond, Now: time.Now, Renew: renew, Gone: gone},
		Words{Renewal: "lock renewal", Gone: "lock gone"},
		func(ctx context.Context, _ scheduler.Term) error { <-ctx.Done(); return leadErr }, zap.New(core))
	if held <= 0 {
		t.Fatalf("held = %v, want > 0", held)
	}
	for _, want := range []struct {
		msg   string
		level zapcore.Level
	}{{"lock renewal failed", zapcore.WarnLevel}, {"lock gone", zapcore.WarnLevel}, {"leadership ended", zapcore.WarnLevel}} {
		got := logs.FilterMessage(want.msg).All()
		if len(got) != 1 || got[0].Level != want.level {
			t.Fatalf("%q logged %d times (%v), want once at %v; all: %v", want.msg, len(got), got, want.level, logs.All())
		}
	}
	end := logs.FilterMessage("leadership ended").All()[0].ContextMap()
	if end["reason"] != string(lease.ReasonLeaseGone) || end["error"] != leadErr.Error() {
		t.Fatalf("leadership ended with %v, want reason %s and lead's error", end, lease.ReasonLeaseGone)
	}
	if _, ok := h.Leading(); ok {
		t.Fatal("the term is still held after Serve returned")
	}
}

// TestRoundFailed_Levels: a loud failure is a warning with the suppressed count, a quiet one a
// debug line.
func TestRoundFailed_Levels(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	hook := RoundFailed(zap.New(core))
	hook(lease.Failure{Attempt: 1, Loud: true, Suppressed: 3, Err: errors.New("x")})
	hook(lease.Failure{Attempt: 2, Err: errors.New("y")})
	all := logs.All()
	if len(all) != 2 || all[0].Level != zapcore.WarnLevel || all[0].ContextMap()["suppressed"] != int64(3) || all[1].Level != zapcore.DebugLevel {
		t.Fatalf("logged %v, want a warning with suppressed=3 then a debug line", all)
	}
}
