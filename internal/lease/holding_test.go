package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"scheduler"
)

func TestHolding(t *testing.T) {
	errNot := errors.New("not confirmed")
	var h Holding[string]
	if _, ok := h.Leading(); ok {
		t.Fatal("zero Holding leads")
	}
	if _, err := h.Check(3, errNot); !errors.Is(err, errNot) {
		t.Fatalf("Check with no term = %v, want %v", err, errNot)
	}
	term := scheduler.Term{Token: 3, Node: "a"}
	h.Set(&term, "holder")
	if got, ok := h.Leading(); !ok || got != term {
		t.Fatalf("Leading = %+v, %v; want %+v, true", got, ok, term)
	}
	if of, err := h.Check(3, errNot); err != nil || of != "holder" {
		t.Fatalf("Check(3) = %q, %v; want holder, nil", of, err)
	}
	if _, err := h.Check(2, errNot); !errors.Is(err, errNot) {
		t.Fatalf("Check(2) = %v, want %v", err, errNot)
	}
	h.Set(nil, "")
	if _, ok := h.Leading(); ok {
		t.Fatal("Holding leads after Set(nil)")
	}
}

func TestHolding_Lead(t *testing.T) {
	base := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: base}
	term := scheduler.Term{Token: 9, Node: "a", Since: base}
	var h Holding[string]
	var seen []string
	ev := Events{
		OnElected: func(got scheduler.Term) {
			if _, ok := h.Leading(); !ok || got != term {
				t.Errorf("OnElected(%+v) with Leading %v, want %+v while held", got, ok, term)
			}
			seen = append(seen, "elected")
		},
		OnLost: func(got scheduler.Term, r Reason) {
			if _, ok := h.Leading(); ok {
				t.Error("OnLost while the term is still held")
			}
			seen = append(seen, "lost:"+string(r))
		},
	}
	r := Renewal{TTL: 3 * time.Second, Margin: time.Second, Now: clock.Now,
		Renew: func(context.Context) error { return nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errLead := errors.New("lead failed")
	held, reason, err := h.Lead(ctx, term, "holder", ev, base, r, func(context.Context, scheduler.Term) error {
		if of, err := h.Check(9, errLead); err != nil || of != "holder" {
			t.Errorf("Check during lead = %q, %v; want holder", of, err)
		}
		seen = append(seen, "lead")
		clock.set(base.Add(1500 * time.Millisecond))
		return errLead
	})
	if held != 1500*time.Millisecond || reason != ReasonLeadFailed || !errors.Is(err, errLead) {
		t.Fatalf("Lead = %v, %s, %v; want 1.5s, %s, %v", held, reason, err, ReasonLeadFailed, errLead)
	}
	if want := []string{"elected", "lead", "lost:lead_failed"}; len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Fatalf("events %v, want %v", seen, want)
	}
}
