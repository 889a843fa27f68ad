package redact

import "testing"

// TestLive: a Live scrubber scrubs nothing until secrets are added, then every secret added so
// far, the ones of earlier additions included.
func TestLive(t *testing.T) {
	var l Live
	if got := l.Scrub("a-secret"); got != "a-secret" {
		t.Fatalf("zero Live scrubbed %q", got)
	}
	l.Add("old-secret")
	l.Add("new-secret", "")
	if got, want := l.Scrub("old-secret new-secret"), "[redacted] [redacted]"; got != want {
		t.Fatalf("Scrub = %q, want %q", got, want)
	}
	// Longest tells a stream's scrubber how much to hold back: the longest secret added yet.
	l.Add("a-much-longer-secret", "short1")
	if got := l.Longest(); got != len("a-much-longer-secret") {
		t.Fatalf("Longest = %d, want %d", got, len("a-much-longer-secret"))
	}
	// Multiline tells the run log whether a line's end may end a secret: not once one spans lines.
	if l.Multiline() {
		t.Fatal("Multiline with no secret of two lines")
	}
	l.Add("-----BEGIN KEY-----\nabc\n-----END KEY-----")
	if !l.Multiline() {
		t.Fatal("not Multiline with a secret of three lines")
	}
}
