package outbox

import (
	"context"
	"errors"
	"time"
)

// errNoDeferral is the hand-back of the fakes that keep no due times: a test that makes a
// destination fail with messages waiting for it runs on the real store.
var errNoDeferral = errors.New("this fake store hands nothing back")

func (*fakeStore) DeferOutbox(context.Context, int64, []string, time.Time, time.Time) (int64, error) {
	return 0, errNoDeferral
}

func (*countingStore) DeferOutbox(context.Context, int64, []string, time.Time, time.Time) (int64, error) {
	return 0, errNoDeferral
}
