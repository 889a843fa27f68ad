package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// timeline collects what happened in one scenario run, in milliseconds from its origin (the
// fault), and the figures worth recording; it prints both at the end of the run, pass or fail.
type timeline struct {
	t       *testing.T
	title   string
	origin  time.Time
	events  []event
	figures []string
	printed bool
}

type event struct {
	at   time.Time
	what string
}

// newTimeline starts a timeline; print shows it, and t.Cleanup does if nothing did (a failed
// run stops early).
func newTimeline(t *testing.T, title string) *timeline {
	tl := &timeline{t: t, title: title}
	t.Cleanup(func() {
		if !tl.printed {
			tl.print()
		}
	})
	return tl
}

// start sets the origin, the moment of the fault.
func (tl *timeline) start(at time.Time, what string) {
	tl.origin = at
	tl.mark(at, "%s", what)
}

// mark records an event; zero times are skipped.
func (tl *timeline) mark(at time.Time, format string, args ...any) {
	if at.IsZero() {
		return
	}
	tl.events = append(tl.events, event{at: at, what: fmt.Sprintf(format, args...)})
}

// figure records a named figure for the summary line.
func (tl *timeline) figure(name string, value any) {
	tl.figures = append(tl.figures, fmt.Sprintf("%s=%v", name, value))
}

// ms is d in whole milliseconds, for figures.
func ms(d time.Duration) int64 { return d.Milliseconds() }

func (tl *timeline) print() {
	tl.printed = true
	sort.SliceStable(tl.events, func(i, j int) bool { return tl.events[i].at.Before(tl.events[j].at) })
	if tl.origin.IsZero() && len(tl.events) > 0 {
		tl.origin = tl.events[0].at
	}
	var b strings.Builder
	fmt.Fprintf(&b, "timeline of %s:\n", tl.title)
	for _, e := range tl.events {
		fmt.Fprintf(&b, "  %+7d ms  %s  %s\n", e.at.Sub(tl.origin).Milliseconds(), stamp(e.at), e.what)
	}
	fmt.Fprintf(&b, "  figures: %s", strings.Join(tl.figures, " "))
	tl.t.Log(b.String())
}
