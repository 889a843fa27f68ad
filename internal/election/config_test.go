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
		// The renewal sent TTL/3 after the last must land before the
		// deadline, or one late answer would end every term.
		if got >= tt.ttl*2/3 {
			t.Errorf("defaultMargin(%v) = %v, want below 2/3 of the TTL", tt.ttl, got)
		}
	}
}

func TestRenewEvery(t *testing.T) {
	tests := []struct {
		ttl, margin, want time.Duration
	}{
		{time.Second, 500 * time.Millisecond, 333 * time.Millisecond},
		{2 * time.Second, 500 * time.Millisecond, time.Second},
		{5 * time.Second, time.Second, 2500 * time.Millisecond},
		{15 * time.Second, 3 * time.Second, 7500 * time.Millisecond},
		{3 * time.Second, 1900 * time.Millisecond, 733 * time.Millisecond},
	}
	for _, tt := range tests {
		got := renewEvery(tt.ttl, tt.margin)
		if got.Round(time.Millisecond) != tt.want {
			t.Errorf("renewEvery(%v, %v) = %v, want %v", tt.ttl, tt.margin, got, tt.want)
		}
		// A third of the time from a renewal to the deadline is left for
		// retrying the next one.
		if left := tt.ttl - tt.margin - got; left*2 < got {
			t.Errorf("renewEvery(%v, %v) = %v leaves %v before the deadline, want at least half of it", tt.ttl, tt.margin, got, left)
		}
	}
}
