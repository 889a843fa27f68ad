package lease

import (
	"errors"
	"testing"

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
