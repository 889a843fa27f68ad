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

// TestMargin_LongestTTL: a TTL past half the longest duration gets its default margin, where
// doubling it first wrapped the bound negative and refused every margin.
func TestMargin_LongestTTL(t *testing.T) {
	ttl := time.Duration(1<<63 - 1).Truncate(time.Second)
	m, err := Margin(ttl, 0)
	if err != nil {
		t.Fatalf("Margin(%v, 0): %v", ttl, err)
	}
	if m != ttl/5 {
		t.Fatalf("margin=%v, want %v", m, ttl/5)
	}
	if _, err := Margin(ttl, ttl-ttl/3); err == nil {
		t.Fatalf("Margin(%v, %v) = nil, want a margin above two thirds refused", ttl, ttl-ttl/3)
	}
	for d, want := range map[time.Duration]time.Duration{0: 0, 1: 0, 2: 1, 3: 2, -7: -4, 5 * time.Second: 3333333333, 1<<62 + 1: 3074457345618258603} {
		if got := twoThirds(d); got != want {
			t.Errorf("twoThirds(%d)=%d, want %d", d, got, want)
		}
	}
}
