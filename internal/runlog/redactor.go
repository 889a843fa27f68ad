package runlog

// Redactor is the scrub of the daemon's secrets: Scrub replaces each of them in a text, and
// Longest is the length of the longest one (0: none), which is how much of a stream a Scrubber
// must hold back to replace each whole. Its methods are safe for concurrent use.
type Redactor interface {
	Scrub(string) string
	Longest() int
	// Multiline reports whether a secret holds a newline (a PEM key): a stream cannot then be
	// let through at each line's end, since a secret may go on in the next line.
	Multiline() bool
}

// Fixed is a Redactor of a scrub function replacing secrets of at most MaxSecret bytes, some
// of them holding a newline if Lines.
type Fixed struct {
	Func      func(string) string
	MaxSecret int
	Lines     bool
}

// Multiline returns f.Lines.
func (f Fixed) Multiline() bool { return f.Lines }

// Scrub returns f.Func(s), or s when f.Func is nil.
func (f Fixed) Scrub(s string) string {
	if f.Func == nil {
		return s
	}
	return f.Func(s)
}

// Longest returns f.MaxSecret.
func (f Fixed) Longest() int { return f.MaxSecret }
