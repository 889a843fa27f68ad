package main

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"scheduler"
	"scheduler/internal/fence"
	"scheduler/internal/testenv"
)

// TestDaemon_OutputHeadAndTail: a run's long output reaches history as the capture kept it: its
// first and last lines around a marker counting exactly the bytes left out, within the ledger's
// bound, with no second cut by the store.
func TestDaemon_OutputHeadAndTail(t *testing.T) {
	c := newCluster(t, testenv.MustDatabase(t), `  - name: chatty
    schedule: "* * * * * *"
    type: exec
    command: [sh, -c, 'echo FIRST; head -c 100000 /dev/zero | tr "\0" x; echo; echo LAST']
`)
	c.start("a")
	var out string
	c.wait("a chatty run", func() bool {
		for _, r := range c.history("chatty") {
			if r.Status == scheduler.StatusSucceeded {
				out = r.Output
				return true
			}
		}
		return false
	})
	const total = len("FIRST\n") + 100000 + len("\nLAST\n")
	head, rest, ok := strings.Cut(out, "[... ")
	count, tail, ok2 := strings.Cut(rest, " bytes omitted ...]\n")
	if !ok || !ok2 || strings.Contains(tail, "[... ") {
		t.Fatalf("want exactly one omission marker, got %d characters: %.60q ... %q", len(out), out, out[max(0, len(out)-60):])
	}
	omitted, err := strconv.Atoi(count)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(head, "FIRST\nxxx") || !strings.HasSuffix(tail, "xxx\nLAST\n") {
		t.Fatalf("head %.20q, tail ...%q: want the first and the last lines", head, tail[max(0, len(tail)-20):])
	}
	// The capture puts the marker on a line of its own; that newline is not output.
	if got := len(head) - 1 + omitted + len(tail); got != total {
		t.Fatalf("head %d + omitted %d + tail %d = %d, want %d", len(head)-1, omitted, len(tail), got, total)
	}
	if n := utf8.RuneCountInString(out); n > fence.MaxExcerpt {
		t.Fatalf("%d characters, more than the ledger's %d", n, fence.MaxExcerpt)
	}
}
