package fence

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Status is the state of a run in the ledger.
type Status string

// The statuses of a run. Only running is not terminal.
const (
	StatusRunning   Status = "running"   // claimed; the job is running or its leader died (an orphan)
	StatusSucceeded Status = "succeeded" // the job finished without error
	StatusFailed    Status = "failed"    // the job finished with an error, after its retries
	StatusSkipped   Status = "skipped"   // not run on purpose (overlap: skip, paused, misfire: skip)
	StatusMissed    Status = "missed"    // not run because no leader was there in time
	StatusFenced    Status = "fenced"    // cut off by a leadership change; its late writes were refused
)

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool {
	switch s {
	case StatusRunning, StatusSucceeded, StatusFailed, StatusSkipped, StatusMissed, StatusFenced:
		return true
	}
	return false
}

// Terminal reports whether s ends a run.
func (s Status) Terminal() bool { return s.Valid() && s != StatusRunning }

// MaxExcerpt is the most characters the ledger keeps of a run's error,
// output and reason. Longer text is cut: error and reason keep their start,
// marked with "…"; output keeps its start and its end around a line
// "[... N bytes omitted ...]", as the jobs' own output capture does.
const MaxExcerpt = 4096

// markerRoom is what the omission marker may take of MaxExcerpt, whatever
// the count it names.
const markerRoom = 48

// timeLayout formats slots in messages.
const timeLayout = time.RFC3339Nano

// Slot identifies a run: a job's scheduled time, or for a manual run its
// trigger time with Manual set. Times are stored in UTC with microsecond
// precision.
type Slot struct {
	Job    string
	At     time.Time
	Manual bool
}

// key identifies the slot exactly as the ledger stores it.
func (s Slot) key() slotKey { return slotKey{s.Job, normTime(s.At).UnixMicro(), s.Manual} }

type slotKey struct {
	job    string
	at     int64
	manual bool
}

// Run is one row of the ledger. Its JSON is the run object of
// `scheduler history --json` and `status --json`.
type Run struct {
	RunID       int64      `json:"run_id"` // stable for the slot across attempts
	Job         string     `json:"job"`
	ScheduledAt time.Time  `json:"scheduled_at"` // the slot, UTC
	Manual      bool       `json:"manual"`       // a manual trigger, keyed by its trigger time
	Status      Status     `json:"status"`
	Token       int64      `json:"token"`       // of the term that claimed (or took over) the run
	Node        string     `json:"node"`        // the replica that ran it
	Attempt     int        `json:"attempt"`     // 1 for the first run, +1 per retry or takeover; 0 if it never ran
	StartedAt   *time.Time `json:"started_at"`  // nil if it never ran
	FinishedAt  *time.Time `json:"finished_at"` // nil while running
	Error       string     `json:"error"`       // at most MaxExcerpt characters, its start
	Output      string     `json:"output"`      // at most MaxExcerpt characters, its start and end
	Reason      string     `json:"reason"`      // why it was skipped, missed or fenced
}

// Slot returns the run's slot.
func (r Run) Slot() Slot { return Slot{Job: r.Job, At: r.ScheduledAt, Manual: r.Manual} }

// Result is the outcome for one slot or run of ClaimMany, RecordMany,
// ReclaimMany or CompleteMany.
//
// The run of a claim, record or reclaim is the run's key: RunID, the slot
// (Job, ScheduledAt, Manual), Status, Token and Attempt; the other fields
// stay empty (History and Last have them). A batch reads back only what
// its caller acts on: a takeover claims, records and takes over thousands
// of slots, and finished runs in the way may hold excerpts of up to
// MaxExcerpt characters each.
type Result struct {
	Run     Run  // the run as this call left it: written by it, or as found
	Written bool // this call created (claim, record), took over (reclaim) or completed the run
}

// Completion finishes a running run.
type Completion struct {
	RunID  int64
	Job    string // the run's job; its fence guards the write
	Status Status // a terminal status
	Error  string
	Output string
	Reason string
	// Attempt is how many attempts the run made; the ledger keeps the larger of it and its own
	// count, which misses retries made while the store was unreachable. 0 keeps the ledger's.
	Attempt int
}

// Outcome records a slot that ends without running.
type Outcome struct {
	Slot   Slot
	Status Status // StatusSkipped or StatusMissed (or StatusFenced, StatusFailed)
	Reason string
}

// cleanText makes s storable as text on both backends: valid UTF-8 and
// without NUL, which Postgres rejects.
func cleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// excerptHead keeps the first MaxExcerpt characters of s.
func excerptHead(s string) string {
	s = cleanText(s)
	if utf8.RuneCountInString(s) <= MaxExcerpt {
		return s
	}
	r := []rune(s)
	return string(r[:MaxExcerpt-1]) + "…"
}

// excerptOutput keeps the start and the end of s, at most MaxExcerpt
// characters in all, with a line between them counting the bytes left out:
// what failed is often in the last lines, what was run in the first.
func excerptOutput(s string) string {
	s = cleanText(s)
	if utf8.RuneCountInString(s) <= MaxExcerpt {
		return s
	}
	r := []rune(s)
	keep := MaxExcerpt - markerRoom
	head, tail := string(r[:keep/2]), string(r[len(r)-(keep-keep/2):])
	omitted := len(s) - len(head) - len(tail)
	return fmt.Sprintf("%s\n[... %d bytes omitted ...]\n%s", head, omitted, tail)
}
