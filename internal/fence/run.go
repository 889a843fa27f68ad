package fence

import (
	"fmt"
	"time"
	"unicode/utf8"

	"scheduler"
	"scheduler/internal/fence/internal/tables"
)

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

// key identifies the slot exactly as the ledger stores it.
func keyOf(s scheduler.SlotKey) slotKey {
	return slotKey{s.Job, tables.NormTime(s.At).UnixMicro(), s.Manual}
}

type slotKey struct {
	job    string
	at     int64
	manual bool
}

// excerptHead keeps the first MaxExcerpt characters of s.
func excerptHead(s string) string {
	s = tables.CleanText(s)
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
	s = tables.CleanText(s)
	if utf8.RuneCountInString(s) <= MaxExcerpt {
		return s
	}
	r := []rune(s)
	keep := MaxExcerpt - markerRoom
	head, tail := string(r[:keep/2]), string(r[len(r)-(keep-keep/2):])
	omitted := len(s) - len(head) - len(tail)
	return fmt.Sprintf("%s\n[... %d bytes omitted ...]\n%s", head, omitted, tail)
}
