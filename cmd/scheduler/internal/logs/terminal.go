package logs

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TerminalWriter passes a run's output on to a terminal, showing as escapes the characters the
// terminal would act on rather than show: a job's output is anyone's text, and an escape
// sequence in it could retitle the window, rewrite the screen, set the clipboard or, on some
// terminals, type into the operator's shell. Control characters other than newline and tab
// become \xNN (or \u00NN for the C1 range), as do bytes that are not UTF-8. A character split
// between two writes is held until the next; Flush writes what is held.
type TerminalWriter struct {
	w       io.Writer
	pending []byte // the start of a character cut off at the end of the last write
}

// NewTerminalWriter returns a TerminalWriter writing to w.
func NewTerminalWriter(w io.Writer) *TerminalWriter { return &TerminalWriter{w: w} }

// Write escapes p and writes it, less the start of a character cut off at its end.
func (t *TerminalWriter) Write(p []byte) (int, error) {
	buf := append(t.pending, p...)
	out := make([]byte, 0, len(buf)+16)
	for len(buf) > 0 {
		r, size := utf8.DecodeRune(buf)
		switch {
		case r == utf8.RuneError && size <= 1 && !utf8.FullRune(buf):
			t.pending = append(t.pending[:0:0], buf...)
			_, err := t.w.Write(out)
			return len(p), err
		case r == utf8.RuneError && size <= 1:
			out = fmt.Appendf(out, `\x%02x`, buf[0])
		case r == '\n' || r == '\t' || !unicode.IsControl(r):
			out = append(out, buf[:size]...)
		case r < utf8.RuneSelf:
			out = fmt.Appendf(out, `\x%02x`, r)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		buf = buf[size:]
	}
	t.pending = t.pending[:0]
	_, err := t.w.Write(out)
	return len(p), err
}

// Flush writes the bytes held back as escapes: the output ended inside a character.
func (t *TerminalWriter) Flush() error {
	var out []byte
	for _, b := range t.pending {
		out = fmt.Appendf(out, `\x%02x`, b)
	}
	t.pending = t.pending[:0]
	if len(out) == 0 {
		return nil
	}
	_, err := t.w.Write(out)
	return err
}

// Escape returns s as a TerminalWriter writes it, for one field of a table.
func Escape(s string) string {
	var b strings.Builder
	t := NewTerminalWriter(&b)
	_, _ = t.Write([]byte(s))
	_ = t.Flush()
	return b.String()
}
