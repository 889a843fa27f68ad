package election

import (
	"strings"
	"testing"
	"time"
)

func TestConfig_Validate(t *testing.T) {
	valid := Config{Prefix: "/scheduler/election", Node: "a", TTL: 5 * time.Second}
	tests := []struct {
		name   string
		change func(*Config)
		want   string // substring of the error; "" for none
	}{
		{"Valid", func(*Config) {}, ""},
		{"ValidMargin", func(c *Config) { c.Margin = 3 * time.Second }, ""},
		{"EmptyPrefix", func(c *Config) { c.Prefix = "" }, "prefix: empty"},
		{"PrefixEndsInSlash", func(c *Config) { c.Prefix = "/scheduler/election/" }, "must not end in /"},
		{"EmptyNode", func(c *Config) { c.Node = "" }, "node: empty"},
		{"ShortTTL", func(c *Config) { c.TTL = 500 * time.Millisecond }, "below 1s"},
		{"FractionalTTL", func(c *Config) { c.TTL = 2500 * time.Millisecond }, "whole number of seconds"},
		{"NegativeMargin", func(c *Config) { c.Margin = -time.Second }, "margin"},
		{"MarginLeavesNoRenewal", func(c *Config) { c.Margin = 4 * time.Second }, "margin"},
		{"AllProblems", func(c *Config) { *c = Config{} }, "node: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.change(&c)
			err := c.validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("validate() = %v, want an error containing %q", err, tt.want)
			}
			if err == nil && c.Now == nil {
				t.Fatalf("validate() left Now nil")
			}
		})
	}
}

func TestDefaultMargin(t *testing.T) {
	tests := []struct {
		ttl, want time.Duration
	}{
		{time.Second, 500 * time.Millisecond},
		{2 * time.Second, 500 * time.Millisecond},
		{5 * time.Second, time.Second},
		{15 * time.Second, 3 * time.Second},
	}
	for _, tt := range tests {
		got := defaultMargin(tt.ttl)
		if got != tt.want {
			t.Errorf("defaultMargin(%v) = %v, want %v", tt.ttl, got, tt.want)
		}
		// The next renewal (renewEvery) must land before the deadline,
		// or one late answer would end every term.
		if got >= tt.ttl*2/3 {
			t.Errorf("defaultMargin(%v) = %v, want below 2/3 of the TTL", tt.ttl, got)
		}
	}
}

func TestRenewEvery(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		ttl, margin, rtt, want time.Duration
	}{
		{time.Second, 500 * ms, ms, 333 * ms},
		{2 * time.Second, 500 * ms, ms, 999 * ms},
		{2 * time.Second, 500 * ms, 0, time.Second},
		{2 * time.Second, 500 * ms, 600 * ms, 600 * ms},
		{5 * time.Second, time.Second, 10 * ms, 2500 * ms},
		{15 * time.Second, 3 * time.Second, 10 * ms, 7500 * ms},
		{3 * time.Second, 1900 * ms, ms, 733 * ms},
		{2 * time.Second, 500 * ms, 2 * time.Second, 200 * ms}, // slower than the TTL: the floor
	}
	for _, tt := range tests {
		got := renewEvery(tt.ttl, tt.margin, tt.rtt)
		if got.Round(ms) != tt.want {
			t.Errorf("renewEvery(%v, %v, %v) = %v, want %v", tt.ttl, tt.margin, tt.rtt, got, tt.want)
		}
		// Unless a round trip alone outlasts the term, the next renewal, answered after a
		// round trip, still leaves time before the deadline for a retry.
		if tt.rtt < tt.ttl-tt.margin-tt.ttl/10 && got+tt.rtt >= tt.ttl-tt.margin {
			t.Errorf("renewEvery(%v, %v, %v) = %v: the renewal is answered after the deadline", tt.ttl, tt.margin, tt.rtt, got)
		}
	}
}
