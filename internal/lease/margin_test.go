package lease

import (
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
