package scheduler_test

import (
	"errors"
	"fmt"
	"testing"

	"scheduler"
)

func TestPermanent(t *testing.T) {
	base := errors.New("bad request")
	err := scheduler.Permanent(base)
	if !errors.Is(err, base) {
		t.Fatalf("errors.Is(Permanent(e), e) = false")
	}
	if !scheduler.IsPermanent(err) || !scheduler.IsPermanent(fmt.Errorf("call: %w", err)) {
		t.Fatalf("IsPermanent(Permanent(e)) = false, also when wrapped")
	}
	if scheduler.IsPermanent(base) || scheduler.IsPermanent(nil) {
		t.Fatalf("IsPermanent of an unmarked error = true")
	}
	if err.Error() != base.Error() {
		t.Fatalf("message = %q, want %q", err.Error(), base.Error())
	}
	if scheduler.Permanent(nil) != nil {
		t.Fatalf("Permanent(nil) != nil")
	}
}

func TestFenceError(t *testing.T) {
	cause := errors.New("fence: job \"a\": token 5 is older than the fence 9")
	err := fmt.Errorf("write: %w", &scheduler.FenceError{Job: "a", Token: 5, Fence: 9, Err: cause})
	var fe *scheduler.FenceError
	if !errors.Is(err, scheduler.ErrFenced) || !errors.Is(err, cause) || !errors.As(err, &fe) || fe.Job != "a" {
		t.Fatalf("err = %v: want ErrFenced, the store's cause and the job readable", err)
	}
	if got, want := err.Error(), "write: "+cause.Error(); got != want {
		t.Fatalf("message = %q, want the store's %q", got, want)
	}
	bare := &scheduler.FenceError{Job: "b", Token: 1, Fence: 2}
	if got, want := bare.Error(), `job "b": token 1 is older than the fence 2`; got != want {
		t.Fatalf("message = %q, want %q", got, want)
	}
}
