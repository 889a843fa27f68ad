package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"time"
)

// logEntry is the part of a replica's JSON log line the suite reads.
type logEntry struct {
	TS      time.Time `json:"ts"`
	Level   string    `json:"level"`
	Logger  string    `json:"logger"`
	Msg     string    `json:"msg"`
	Node    string    `json:"node"`
	Token   int64     `json:"token"`
	Lease   string    `json:"lease"`
	Reason  string    `json:"reason"`
	Job     string    `json:"job"`
	Slot    time.Time `json:"slot"`
	Status  string    `json:"status"`
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
}

// readLog parses a replica's log; lines that are not JSON (a panic, the etcd member's notes)
// are skipped.
func readLog(path string) []logEntry {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []logEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e logEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil && !e.TS.IsZero() {
			out = append(out, e)
		}
	}
	return out
}

// term is one leadership term of one replica, as its log tells it.
type term struct {
	node  string
	token int64
	lease string
	won   time.Time // "campaign won"
	ended time.Time // "leadership ended" (after the runs and writes drained); zero while it lasts
	// stopped is the runner's "stopped leading": when the term stopped starting runs and sending
	// claims, which may be well before ended while an outcome write waits for a slow store.
	stopped time.Time
	reason  string
}

// stop returns when the term stopped acting as leader: stopped, or ended for a log without it.
func (t term) stop() time.Time {
	if !t.stopped.IsZero() {
		return t.stopped
	}
	return t.ended
}

// terms extracts the terms from a replica's log entries.
func terms(node string, entries []logEntry) []term {
	var out []term
	for _, e := range entries {
		switch e.Msg {
		case "campaign won":
			out = append(out, term{node: node, token: e.Token, lease: e.Lease, won: e.TS})
		case "stopped leading":
			for i := len(out) - 1; i >= 0; i-- {
				if out[i].token == e.Token && out[i].stopped.IsZero() {
					out[i].stopped = e.TS
					break
				}
			}
		case "leadership ended":
			for i := len(out) - 1; i >= 0; i-- {
				if out[i].token == e.Token && out[i].ended.IsZero() {
					out[i].ended, out[i].reason = e.TS, e.Reason
					break
				}
			}
		}
	}
	return out
}

// sortTerms orders terms by token, the order etcd granted them.
func sortTerms(ts []term) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].token < ts[j].token })
}

// fencedWrites counts the log lines, at or after since, that report a write the store refused
// for a stale token (a run or its outcome fenced out, a term ended by the fence).
func fencedWrites(entries []logEntry, since time.Time) int {
	n := 0
	for _, e := range entries {
		if !e.TS.Before(since) && (strings.Contains(e.Msg, "fenced") || strings.Contains(e.Error, "older than the fence")) {
			n++
		}
	}
	return n
}

// entriesAfter returns the entries with msg logged at or after since.
func entriesAfter(entries []logEntry, msg string, since time.Time) []logEntry {
	var out []logEntry
	for _, e := range entries {
		if e.Msg == msg && !e.TS.Before(since) {
			out = append(out, e)
		}
	}
	return out
}
