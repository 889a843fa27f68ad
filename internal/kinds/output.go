package kinds

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
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
	total   int64
}

// NewCapture returns a Capture keeping at most limit bytes (plus the marker); limit <= 0 means
// DefaultOutputLimit.
func NewCapture(limit int) *Capture {
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	head := limit / 2
	return &Capture{headCap: head, tailCap: limit - head}
}

// Write keeps what fits of p and never fails.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := c.headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if len(p) >= c.tailCap {
		c.tail = append(c.tail[:0], p[len(p)-c.tailCap:]...)
		return n, nil
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*c.tailCap {
		keep := c.tail[len(c.tail)-c.tailCap:]
		c.tail = append(c.tail[:0], keep...)
	}
	return n, nil
}

// Len reports how many bytes were written in all, kept or not.
func (c *Capture) Len() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// String returns the excerpt: everything written when it fits, else the head, a line
// "[... N bytes omitted ...]" and the tail. The result is valid UTF-8 without NUL bytes (both
// replaced by U+FFFD) so that it can be stored in a text column as it is.
func (c *Capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := c.tail
	if len(tail) > c.tailCap {
		tail = tail[len(tail)-c.tailCap:]
	}
	dropped := c.total - int64(len(c.head)) - int64(len(tail))
	if dropped == 0 {
		return storableText(string(c.head) + string(tail))
	}
	head, tail := trimHeadRune(c.head), trimTailRune(tail)
	dropped = c.total - int64(len(head)) - int64(len(tail))
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
