package outbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"scheduler"
)

// TestDispatcher_DeadNotice: the record of a dead outcome carries the notice Config.Dead makes
// of it; a delivered or retried message's record carries none, and Dead is not asked.
func TestDispatcher_DeadNotice(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	ms := queued(3, now)
	st := &fakeStore{queue: ms}
	asked := make(chan string, 3)
	d, err := New(Config{Store: st, Now: func() time.Time { return now }, MaxAttempts: 5,
		After: func(time.Duration) <-chan time.Time { return nil },
		Dead: func(m scheduler.Message, d scheduler.Delivery) *scheduler.Notice {
			asked <- m.Key + " " + d.Error
			return &scheduler.Notice{Messages: []scheduler.Message{{Key: "notify." + m.Key}}}
		},
		Deliverers: map[scheduler.MessageKind]Deliverer{scheduler.MessageEmail: deliverFunc(func(_ context.Context, m scheduler.Message) error {
			switch m.Key {
			case "k0":
				return Permanent(errors.New("550 no such user"))
			case "k1":
				return errors.New("421 try later")
			}
			return nil
		})}})
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, d, "all three messages recorded", func() bool {
		_, a := st.record("k0")
		_, b := st.record("k1")
		_, c := st.record("k2")
		return a && b && c
	})
	if got := <-asked; !strings.HasPrefix(got, "k0 ") || !strings.HasSuffix(got, "550 no such user") {
		t.Fatalf("Dead asked about %q, want k0 with its error", got)
	}
	if r, _ := st.record("k0"); r.Outcome != scheduler.DeliveryDead || r.Notice == nil || r.Notice.Messages[0].Key != "notify.k0" {
		t.Fatalf("record of k0 = %+v, want dead with its notice", r)
	}
	for _, k := range []string{"k1", "k2"} {
		if r, _ := st.record(k); r.Notice != nil {
			t.Fatalf("record of %s = %+v, want no notice", k, r)
		}
	}
	select {
	case got := <-asked:
		t.Fatalf("Dead asked again, about %q", got)
	default:
	}
}
