package kinds

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"scheduler/internal/runlog"
)

// DefaultOutputLimit is how many bytes of a run's output are kept when a job sets no limit, half
// from the start and half from the end. With the omission marker, and the status line and notes
// an http job adds, the excerpt stays within what the ledger stores of an output
// (fence.MaxExcerpt characters), so history shows the excerpt as it was captured instead of
// cutting it again.
const DefaultOutputLimit = 3800

// Capture is an io.Writer that keeps a bounded excerpt of everything written to it: the first
// half of its limit and the last half, with a marker line counting the bytes dropped in between.
// Its memory stays bounded however much is written. It is safe for concurrent use.
type Capture struct {
	mu      sync.Mutex
	headCap int
	tailCap int
	head    []byte
	tail    []byte // the newest bytes past head; holds up to 2*tailCap before it is compacted
	total   int64  // bytes written
	// scrub, when set, scrubs what is written before it is cut to head and tail; it holds back
	// the bytes it cannot scrub yet.
	scrub *runlog.Scrubber
	cut   int64 // bytes cut to head and tail, kept or dropped: what scrub let through
}

// NewCapture returns a Capture keeping at most limit bytes (plus the marker); limit <= 0 means
// DefaultOutputLimit.
func NewCapture(limit int) *Capture {
	return NewScrubbedCapture(limit, nil)
}

// NewScrubbedCapture returns a Capture like NewCapture's that scrubs what is written with scrub
// (nil: none) before it cuts it. The runner scrubs the excerpt again before it stores it, but a
// secret split by the cut, at the head's end or the tail's start, would no longer match there:
// scrubbed as it comes, the output keeps no part of a secret it printed whole.
func NewScrubbedCapture(limit int, scrub runlog.Redactor) *Capture {
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	head := limit / 2
	c := &Capture{headCap: head, tailCap: limit - head}
	if scrub != nil {
		c.scrub = runlog.NewScrubber(scrub)
	}
	return c
}

// Write keeps what fits of p and never fails.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if c.scrub != nil {
		c.add([]byte(c.scrub.Next(p)))
	} else {
		c.add(p)
	}
	return n, nil
}

// add cuts p, the next bytes of the text excerpted, to head and tail. The caller holds c.mu, or
// owns c.
func (c *Capture) add(p []byte) {
	c.cut += int64(len(p))
	if room := c.headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return
	}
	if len(p) >= c.tailCap {
		c.tail = append(c.tail[:0], p[len(p)-c.tailCap:]...)
		return
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*c.tailCap {
		keep := c.tail[len(c.tail)-c.tailCap:]
		c.tail = append(c.tail[:0], keep...)
	}
}

// Len reports how many bytes were written in all, kept or not.
func (c *Capture) Len() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// String returns the excerpt: everything written when it fits, else the head, a line
// "[... N bytes omitted ...]" and the tail; of what was written scrubbed, when the Capture
// scrubs. The result is valid UTF-8 without NUL bytes (both replaced by U+FFFD) so that it can
// be stored in a text column as it is.
func (c *Capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scrub == nil {
		return c.excerpt()
	}
	rest := c.scrub.Rest()
	if rest == "" {
		return c.excerpt()
	}
	// The bytes held back end the output unless more is written: cut them too, in a copy,
	// leaving the Capture as it was for those.
	v := Capture{headCap: c.headCap, tailCap: c.tailCap, head: slices.Clone(c.head), tail: slices.Clone(c.tail), cut: c.cut}
	v.add([]byte(rest))
	return v.excerpt()
}

// excerpt returns the excerpt of what was cut to head and tail; see String. The caller holds
// c.mu, or owns c.
func (c *Capture) excerpt() string {
	tail := c.tail
	if len(tail) > c.tailCap {
		tail = tail[len(tail)-c.tailCap:]
	}
	dropped := c.cut - int64(len(c.head)) - int64(len(tail))
	if dropped == 0 {
		return storableText(string(c.head) + string(tail))
	}
	head, tail := trimHeadRune(c.head), trimTailRune(tail)
	dropped = c.cut - int64(len(head)) - int64(len(tail))
	var b strings.Builder
	b.Grow(len(head) + len(tail) + 40)
	b.Write(head)
	if len(head) > 0 && head[len(head)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[... %d bytes omitted ...]\n", dropped)
	b.Write(tail)
	return storableText(b.String())
}

// Excerpt returns s cut to about limit bytes the way Capture cuts output; limit <= 0 means
// DefaultOutputLimit.
func Excerpt(s string, limit int) string {
	c := NewCapture(limit)
	_, _ = c.Write([]byte(s))
	return c.String()
}

// trimHeadRune drops an incomplete UTF-8 sequence cut off at the end of b.
func trimHeadRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		r := b[len(b)-i]
		if utf8.RuneStart(r) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// trimTailRune drops the continuation bytes of a UTF-8 sequence cut off at the start of b.
func trimTailRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}

// storableText makes s storable in a Postgres text column, which rejects invalid UTF-8 and NUL.
func storableText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}
