package outbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"scheduler"
)

// TestDispatcher_ScrubsDeliveryErrors: a server's refusal may quote what it was sent, the SMTP
// login's password included. With Config.Scrub the error is scrubbed before it is recorded (and
// so shown by `scheduler outbox` and the console), logged, or put in a dead message's notice.
func TestDispatcher_ScrubsDeliveryErrors(t *testing.T) {
	const secret = "smtp-Pa55word-xyz"
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	st := &fakeStore{queue: queued(2, now)}
	core, logs := observer.New(zap.InfoLevel)
	dead := make(chan string, 2)
	d, err := New(Config{Store: st, Now: func() time.Time { return now }, MaxAttempts: 5, Logger: zap.New(core),
		After: func(time.Duration) <-chan time.Time { return nil },
		Scrub: func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") },
		Dead: func(_ scheduler.Message, d scheduler.Delivery) *scheduler.Notice {
			dead <- d.Error
			return nil
		},
		Deliverers: map[scheduler.MessageKind]Deliverer{scheduler.MessageEmail: deliverFunc(func(_ context.Context, m scheduler.Message) error {
			if m.Key == "k0" {
				return Permanent(errors.New(`SMTP AUTH failed: 535 "5.7.8 bad credentials: u1 ` + secret + `"`))
			}
			return errors.New("454 4.7.0 temporary failure for u1 " + secret)
		})}})
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, d, "both messages recorded", func() bool {
		_, a := st.record("k0")
		_, b := st.record("k1")
		return a && b
	})
	for _, k := range []string{"k0", "k1"} {
		r, _ := st.record(k)
		if strings.Contains(r.Error, secret) || !strings.Contains(r.Error, "[redacted]") {
			t.Errorf("record of %s: error %q, want the password redacted", k, r.Error)
		}
	}
	if got := <-dead; strings.Contains(got, secret) {
		t.Errorf("the dead message's notice was made of %q", got)
	}
	for _, e := range logs.All() {
		for _, f := range e.Context {
			if strings.Contains(f.String, secret) || strings.Contains(e.Message, secret) {
				t.Errorf("log line %q carries the password in %s: %q", e.Message, f.Key, f.String)
			}
		}
	}
}
