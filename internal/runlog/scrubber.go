package runlog

import "strings"

// Overlap is the fewest bytes of a stream a Scrubber holds back, unscrubbed, behind what it has
// let through; it holds back more behind a longer secret (Redactor.Longest): a secret of up to
// that many bytes plus one is replaced whole however the stream is cut into writes. The
// daemon's secrets (passwords, DSNs, tokens) are most often shorter.
const Overlap = 2 << 10

// Scrubber scrubs a stream that comes in pieces with a scrub that only sees whole strings (the
// daemon's, which replaces each configured secret): scrubbing each piece on its own would miss
// a secret split between two of them, and scrubbing the text before a cut on its own would miss
// one straddling the cut. So it lets through only the scrubbed text that no later byte can
// change, and holds back the rest, the overlap or a little more (under 4 times it), until more
// comes or End. Its zero value is not usable; make one with NewScrubber. It is not safe for
// concurrent use.
type Scrubber struct {
	r       Redactor
	pending []byte // the stream's bytes not let through yet, as written
	retry   int    // after a search for a cut found none: the length of pending to search again at
}

// NewScrubber returns a Scrubber scrubbing with r (nil: none).
func NewScrubber(r Redactor) *Scrubber {
	if r == nil {
		r = Fixed{}
	}
	return &Scrubber{r: r}
}

func (s *Scrubber) scrub(text string) string { return s.r.Scrub(text) }

// Next takes p, the stream's next bytes, and returns, scrubbed, what of the stream can be let
// through now; "" while less than twice the overlap (Overlap, or the longest secret's length if
// that is more) is held back.
func (s *Scrubber) Next(p []byte) string {
	overlap := max(Overlap, s.r.Longest()) // read once: a reload may add a longer secret
	s.pending = append(s.pending, p...)
	if len(s.pending) < max(2*overlap, s.retry) {
		return "" // settle in steps of overlap bytes or more, not on every write
	}
	s.retry = 0
	all := s.scrub(string(s.pending))
	// Keeping at least overlap bytes after the cut, no secret that begins before it can end in
	// a later write. A secret straddling the first cut tried is stepped over backwards: in
	// growing steps first, up to overlap bytes, before the start of any secret that can straddle
	// it; byte by byte only when those land inside other secrets, printed back to back.
	end := len(s.pending) - overlap
	for d := 0; ; d = min(max(1, 2*d), overlap) {
		if out, ok := s.cut(all, end-d); ok {
			return out
		}
		if d == overlap {
			break
		}
	}
	for d := 3; d < Overlap; d++ { // not overlap: each try scrubs what is held back
		if out, ok := s.cut(all, end-d); ok {
			return out
		}
	}
	// Every cut tried lies inside a secret: a run of them back to back (or one longer than the
	// Redactor said). Wait for the cuts to pass it; past 4*overlap bytes held back, let everything through
	// scrubbed, so that memory stays bounded whatever is printed.
	if len(s.pending) < 4*overlap {
		s.retry = len(s.pending) + overlap/2
		return ""
	}
	s.pending, s.retry = s.pending[:0], 0
	return all
}

// cut lets through the stream's first n held back bytes, scrubbed, when that is safe: when the
// scrubbed text of the bytes after them is the end of all, the scrubbed whole, no secret
// straddles the cut, and those bytes can be scrubbed again with what comes next.
func (s *Scrubber) cut(all string, n int) (string, bool) {
	rest := s.scrub(string(s.pending[n:]))
	if !strings.HasSuffix(all, rest) {
		return "", false
	}
	s.pending = append(s.pending[:0], s.pending[n:]...)
	return all[:len(all)-len(rest)], true
}

// End takes p, the stream's last bytes for now (a line's end, the end of an attempt), and
// returns, scrubbed, everything held back and p; the stream starts afresh after it.
func (s *Scrubber) End(p []byte) string {
	s.pending = append(s.pending, p...)
	out := s.scrub(string(s.pending))
	s.pending, s.retry = s.pending[:0], 0
	return out
}

// Rest returns, scrubbed, what is held back, and goes on holding it back: what End(nil) would
// return now.
func (s *Scrubber) Rest() string {
	if len(s.pending) == 0 {
		return ""
	}
	return s.scrub(string(s.pending))
}
