package lease

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMargin(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ttl, margin time.Duration
		want        time.Duration
		wantErr     bool
	}{
		{name: "DefaultIsAFifthOfTheTTL", ttl: 10 * time.Second, want: 2 * time.Second},
		{name: "DefaultIsAtLeastTheFloor", ttl: time.Second, want: 500 * time.Millisecond},
		{name: "GivenIsKept", ttl: 3 * time.Second, margin: time.Second, want: time.Second},
		{name: "Negative", ttl: 3 * time.Second, margin: -time.Second, want: -time.Second, wantErr: true},
		{name: "AtTwoThirds", ttl: 3 * time.Second, margin: 2 * time.Second, want: 2 * time.Second, wantErr: true},
		{name: "DefaultTooLargeForAShortTTL", ttl: 600 * time.Millisecond, want: 500 * time.Millisecond, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Margin(tc.ttl, tc.margin)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("Margin(%v, %v) = %v, %v; want %v, error %v", tc.ttl, tc.margin, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestTiming(t *testing.T) {
	for _, tc := range []struct {
		name         string
		ttl, margin  time.Duration
		poll         *time.Duration // nil: a backend without a poll
		want         []string       // each in the joined errors
		wantMargin   time.Duration
		wantPollSame bool // the poll defaulted to the TTL
	}{
		{name: "Defaults", ttl: 2 * time.Second, poll: new(time.Duration), wantMargin: 500 * time.Millisecond, wantPollSame: true},
		{name: "NoPoll", ttl: 2 * time.Second, wantMargin: 500 * time.Millisecond},
		{name: "ShortTTL", ttl: 500 * time.Millisecond, margin: 100 * time.Millisecond, want: []string{"session 500ms: below 1s"}, wantMargin: 100 * time.Millisecond},
		{name: "WideMargin", ttl: 2 * time.Second, margin: 1500 * time.Millisecond, want: []string{"margin 1.5s"}, wantMargin: 1500 * time.Millisecond},
		{name: "NegativePoll", ttl: 2 * time.Second, poll: ptr(-time.Second), want: []string{"poll -1s: negative"}, wantMargin: 500 * time.Millisecond},
		{name: "AllAtOnce", ttl: 100 * time.Millisecond, poll: ptr(-time.Second), want: []string{"below 1s", "margin", "poll"}, wantMargin: 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			margin := tc.margin
			var now func() time.Time
			errs := Timing("session", tc.ttl, &margin, tc.poll, &now)
			got := errors.Join(errs...)
			if len(tc.want) == 0 && got != nil {
				t.Fatalf("Timing = %v, want no error", got)
			}
			if len(errs) != len(tc.want) {
				t.Fatalf("Timing = %v, want %d errors", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Fatalf("error %d = %v, want %q", i, errs[i], w)
				}
			}
			if margin != tc.wantMargin {
				t.Fatalf("margin=%v, want %v", margin, tc.wantMargin)
			}
			if tc.wantPollSame && *tc.poll != tc.ttl {
				t.Fatalf("poll=%v, want the TTL %v", *tc.poll, tc.ttl)
			}
			if now == nil {
				t.Fatal("clock not defaulted")
			}
		})
	}
}

func ptr(d time.Duration) *time.Duration { return &d }
