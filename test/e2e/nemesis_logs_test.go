package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
)

// logTail reads a replica's log as it grows, parsing each line once: an hour of faults makes
// logs that re-reading whole at every choice of a target would cost more than the faults.
type logTail struct {
	path    string
	offset  int64
	entries []logEntry
}

// refresh parses the complete lines written since the last call.
func (l *logTail) refresh() []logEntry {
	f, err := os.Open(l.path)
	if err != nil {
		return l.entries
	}
	defer f.Close()
	if _, err := f.Seek(l.offset, io.SeekStart); err != nil {
		return l.entries
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return l.entries
	}
	end := bytes.LastIndexByte(b, '\n')
	if end < 0 {
		return l.entries
	}
	for _, line := range bytes.Split(b[:end], []byte("\n")) {
		var e logEntry
		if json.Unmarshal(line, &e) == nil && !e.TS.IsZero() {
			l.entries = append(l.entries, e)
		}
	}
	l.offset += int64(end + 1)
	return l.entries
}

// terms returns every replica's terms, by token, from the logs read so far and since.
func (n *nemesis) terms() []term {
	var all []term
	for _, node := range nodes {
		l, ok := n.logs[node]
		if !ok {
			l = &logTail{path: n.d.replicas[node].log}
			n.logs[node] = l
		}
		all = append(all, terms(node, l.refresh())...)
	}
	sortTerms(all)
	return all
}

// leader is deployment.leader on the logs read incrementally: the newest term not ended whose
// replica runs, and has run since the term was won (a replica killed and restarted never logs
// the end of the term it had).
func (n *nemesis) leader() (term, bool) {
	ts := n.terms()
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].ended.IsZero() && !n.proc(ts[i].node).exited() && ts[i].won.After(n.startedAt[ts[i].node]) {
			return ts[i], true
		}
	}
	return term{}, false
}

// runStarts is deployment.runStarts on the logs read incrementally.
func (n *nemesis) runStarts(job string) []runStart {
	n.terms() // refreshes the logs
	var out []runStart
	for _, node := range nodes {
		for _, e := range n.logs[node].entries {
			if e.Msg == "run started" && e.Job == job {
				out = append(out, runStart{node: node, slot: e.Slot.UTC(), at: e.TS, token: e.Token, attempt: e.Attempt})
			}
		}
	}
	return out
}
