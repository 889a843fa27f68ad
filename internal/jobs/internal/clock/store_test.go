package clock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// storeAt is a Store whose clock reads at (ok false when zero), or fails with err.
type storeAt struct {
	at  time.Time
	err error
}

func (s storeAt) StoreNow(context.Context) (time.Time, bool, error) {
	return s.at, !s.at.IsZero(), s.err
}

// TestAhead: how far a clock runs ahead of its store's; none when it runs behind, when the store
// keeps no time, or when its clock cannot be read.
func TestAhead(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := NewFake(now)
	for _, tc := range []struct {
		name    string
		s       Store
		want    time.Duration
		wantErr bool
	}{
		{"ahead", storeAt{at: now.Add(-time.Hour)}, time.Hour, false},
		{"behind", storeAt{at: now.Add(time.Minute)}, 0, false},
		{"no time of its own", storeAt{}, 0, false},
		{"no store", nil, 0, false},
		{"unreadable", storeAt{err: errors.New("connection refused")}, 0, true},
	} {
		got, err := Ahead(context.Background(), c, tc.s)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: Ahead=%s, %v; want %s, error %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
	if err := ErrAhead(time.Hour); !strings.Contains(err.Error(), "1h0m0s ahead of the store's") {
		t.Errorf("ErrAhead says %q, want how far ahead", err)
	}
}
