package runlog

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// Defaults of a Book.
const (
	// MaxKept is how many of a run's newest bytes a Book keeps.
	MaxKept = 64 << 10
	// MaxTotal bounds the bytes a Book keeps of all runs together: past it, a run that writes
	// keeps only its newest MinKept bytes, so a herd of talkative runs cannot fill the leader.
	MaxTotal = 32 << 20
	// MinKept is what a run keeps while the Book is past MaxTotal.
	MinKept = 4 << 10
	// Linger is how long a Book keeps a run after its last attempt ended, for a follower that
	// reads the end of it.
	Linger = time.Minute
)

// Book keeps the output of the runs in progress. Its zero value is not usable; make one with
// New. It is safe for concurrent use.
type Book struct {
	now   func() time.Time
	scrub Redactor

	mu    sync.Mutex
	runs  map[string]*entry // by run id
	total int               // bytes kept, of every run
}

// entry is one run's kept output.
type entry struct {
	job     string
	buf     []byte        // the newest bytes, at most MaxKept
	partial *Scrubber     // holds back the start of a line not ended yet, not scrubbed yet
	start   int64         // the offset of buf[0] in the run's output
	writing int           // attempts writing now
	ended   time.Time     // when the last attempt ended; zero while one writes
	changed chan struct{} // closed and replaced on every write and end
}

// New returns an empty Book on the clock now (nil: time.Now). scrub (nil: none) rewrites each
// line before it is kept, as the ledger's output is (the daemon's secrets replaced), so that
// following a run shows nothing history would not: a line is kept once it ends or its attempt
// ends. A line longer than twice a Scrubber's overlap is kept as it comes but for its last
// bytes, which the Scrubber holds back so that a secret across the cut is still replaced whole.
func New(now func() time.Time, scrub Redactor) *Book {
	if now == nil {
		now = time.Now
	}
	if scrub == nil {
		scrub = Fixed{}
	}
	return &Book{now: now, scrub: scrub, runs: map[string]*entry{}}
}

// Scrub returns s scrubbed as the Book scrubs what it keeps: the daemon's secrets replaced. An
// attempt's kind finds it (with Longest: the Book is a Redactor) on the attempt's live output,
// to scrub the output it keeps for the ledger as it comes, before cutting it to an excerpt
// whose cut could split a secret.
func (b *Book) Scrub(s string) string { return b.scrub.Scrub(s) }

// Longest returns the length of the longest secret Scrub replaces.
func (b *Book) Longest() int { return b.scrub.Longest() }

// Multiline reports whether a secret Scrub replaces holds a newline.
func (b *Book) Multiline() bool { return b.scrub.Multiline() }

// Open returns where an attempt of job's run runID writes its output, and done, to be called
// once when the attempt has written everything; see scheduler.LiveOutput. A retry of the run
// opens it again and goes on with the same output.
func (b *Book) Open(job, runID string) (io.Writer, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweep()
	e := b.runs[runID]
	if e == nil || e.job != job {
		e = &entry{job: job, partial: NewScrubber(b.scrub), changed: make(chan struct{})}
		b.runs[runID] = e
	}
	e.writing++
	e.ended = time.Time{}
	var once sync.Once
	return writer{b, e}, func() { once.Do(func() { b.end(e) }) }
}

// sweep forgets the runs that ended more than Linger ago. The caller holds b.mu.
func (b *Book) sweep() {
	now := b.now()
	for id, e := range b.runs {
		if e.writing == 0 && now.Sub(e.ended) > Linger {
			b.total -= len(e.buf)
			delete(b.runs, id)
		}
	}
}

// end records that an attempt of e stopped writing.
func (b *Book) end(e *entry) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keep(e, e.partial.End(nil))
	if e.writing--; e.writing == 0 {
		e.ended = b.now()
	}
	e.notify()
}

// keep appends text, scrubbed already, to e's output, dropping the oldest bytes past MaxKept.
// The caller holds b.mu.
func (b *Book) keep(e *entry, text string) {
	if len(text) == 0 {
		return
	}
	before := len(e.buf)
	e.buf = append(e.buf, text...)
	limit := MaxKept
	if b.total+len(e.buf)-before > MaxTotal {
		limit = MinKept
	}
	if over := len(e.buf) - limit; over > 0 {
		e.buf = append(e.buf[:0], e.buf[over:]...)
		e.start += int64(over)
	}
	b.total += len(e.buf) - before
}

// notify wakes e's readers. The caller holds the Book's lock.
func (e *entry) notify() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// writer is an attempt's writer into its run's entry.
type writer struct {
	b *Book
	e *entry
}

// Write keeps the lines p ends, scrubbed, and holds back the start of the next (of a long one,
// what its Scrubber holds back); it never fails. While a secret holds a newline, a line's end
// lets nothing through by itself: the Scrubber holds back as much as the longest secret.
func (w writer) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	e := w.e
	n := len(p)
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 && !w.b.scrub.Multiline() {
		w.b.keep(e, e.partial.End(p[:i+1]))
		p = p[i+1:]
	}
	w.b.keep(e, e.partial.Next(p))
	e.notify()
	return n, nil
}

// Chunk is what Read returns: output from Offset, and whether the run's attempt has ended.
type Chunk struct {
	Offset int64  // the offset of Data's first byte: above the one asked for when those were dropped
	Data   []byte // a copy
	Ended  bool   // no attempt of the run writes now: nothing more comes unless a retry opens it
	// Changed is closed when more comes or the attempt ends.
	Changed <-chan struct{}
}

// Read returns run runID's output from offset from on, as kept; false when the Book does not
// have the run.
func (b *Book) Read(runID string, from int64) (Chunk, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.runs[runID]
	if e == nil {
		return Chunk{}, false
	}
	from = max(from, e.start)
	end := e.start + int64(len(e.buf))
	c := Chunk{Offset: min(from, end), Ended: e.writing == 0, Changed: e.changed}
	if from < end {
		c.Data = append([]byte(nil), e.buf[from-e.start:]...)
	}
	return c, true
}
