package runlog

import (
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// TestScrubber_AnyWrites: whatever way a stream is cut into writes, what a Scrubber lets through
// and then its End make the whole stream scrubbed at once, for secrets of up to Overlap+1 bytes,
// some the start of others; and it holds back less than 4*Overlap bytes.
func TestScrubber_AnyWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	long := make([]byte, Overlap+1)
	for i := range long {
		long[i] = 'A' + byte(rng.IntN(26))
	}
	secrets := []string{"pw", "pa55word", "pa55word-and-more", "kkkkkkkk-end", string(long)}
	sorted := append([]string(nil), secrets...)
	sort.SliceStable(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	var pairs []string
	for _, s := range sorted {
		pairs = append(pairs, s, "[redacted]")
	}
	scrub := strings.NewReplacer(pairs...).Replace
	for round := range 60 {
		var text strings.Builder
		for text.Len() < 6*Overlap+rng.IntN(4*Overlap) {
			if rng.IntN(4) == 0 {
				text.WriteString(secrets[rng.IntN(len(secrets))])
			} else {
				text.WriteString(strings.Repeat("x.", 1+rng.IntN(200)))
			}
		}
		all := text.String()
		s := NewScrubber(Fixed{Func: scrub})
		var got strings.Builder
		for rest := all; rest != ""; {
			n := min(len(rest), 1+rng.IntN([]int{8, 300, 3 * Overlap}[round%3]))
			got.WriteString(s.Next([]byte(rest[:n])))
			rest = rest[n:]
			if len(s.pending) >= 4*Overlap {
				t.Fatalf("round %d: %d bytes held back", round, len(s.pending))
			}
		}
		if rest := s.Rest(); rest != scrub(string(s.pending)) {
			t.Fatalf("round %d: Rest %q, want what is held back scrubbed", round, rest)
		}
		got.WriteString(s.End(nil))
		if want := scrub(all); got.String() != want {
			t.Fatalf("round %d: %d bytes let through differ from the whole scrubbed (%d bytes)", round, got.Len(), len(want))
		}
		if s.Rest() != "" || s.End(nil) != "" {
			t.Fatalf("round %d: something held back after End", round)
		}
	}
}

// TestScrubber_LongerSecret: a secret longer than Overlap, straddling every cut tried, is waited
// for until the cuts pass it.
func TestScrubber_LongerSecret(t *testing.T) {
	secret := strings.Repeat("S", 3*Overlap)
	scrub := strings.NewReplacer(secret, "[redacted]").Replace
	s := NewScrubber(Fixed{Func: scrub})
	if got := s.Next([]byte("a" + secret + "b")); got != "" {
		t.Fatalf("let through %q while the secret straddles every cut", got)
	}
	if got := s.Next([]byte(strings.Repeat("c", Overlap))); got != "a[redacted]b" {
		t.Fatalf("let through %q once the cuts passed the secret, want it scrubbed", got)
	}
	if got := s.End(nil); got != strings.Repeat("c", Overlap) {
		t.Fatalf("End returned %d bytes, want the Overlap held back", len(got))
	}
}
