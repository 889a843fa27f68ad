package e2e

import (
	"fmt"
	"sort"
	"time"

	"scheduler/internal/testenv"
)

// mark is one line of the exec job's file: an execution of the job that reached its end.
type mark struct {
	Slot    time.Time
	Token   int64
	Attempt int
	At      time.Time
}

// slotRow is a row of the sql job's table.
type slotRow struct {
	Slot  time.Time
	Token int64
	At    time.Time
}

// nemesisData is what the checker reads: the store's data, the exec job's side effects and the
// e-mails the SMTP server received.
type nemesisData struct {
	snap   snapshot
	marks  []mark
	rows   []slotRow
	emails []testenv.SMTPMessage
	// untrusted is the receiver's log and the job role's attacks (checkUntrusted).
	untrusted untrustedData
}

// rerun is a slot of the exec job whose side effect happened more than once, each under a term
// of its own: what the README allows when a term ends before the run's outcome is recorded.
type rerun struct {
	slot   time.Time
	tokens []int64
}

// nemesisReport is what the checker found.
type nemesisReport struct {
	violations []string
	slots      int // ledger rows checked
	reruns     []rerun
	duplicates int // e-mails received again with a Message-ID received before
	untrusted  untrustedReport
}

// checkNemesis checks data against what must hold whatever the faults were; settled says the
// jobs were stopped and the outbox drained, so that what may still be on its way must be there:
//
//   - the invoices' invariants (invariants): all clients once per succeeded slot, none billed for a
//     missed or skipped slot, no stale write of the ledger, the invoices or the sql job's rows,
//     against the jobs' fences (jobFences);
//   - settled: every billed slot succeeded, no run is left running;
//   - the exec job: every execution belongs to a slot the ledger knows, under a token that raised
//     the fence, and none to a missed or skipped slot; a succeeded slot executed at least once;
//     two executions of one slot under one token are a violation (a term does not run a finished
//     run again), under two tokens a rerun, counted (see rerun);
//   - the sql job: at most one row per slot, none for a missed or skipped slot or one the ledger
//     does not know, exactly one for a succeeded slot, written inside its own term;
//   - settled: every invoice's e-mail received, none without its invoice (checkEmails);
//   - the http job's receiver and the job role (checkUntrusted).
func checkNemesis(data nemesisData, settled bool) nemesisReport {
	var rep nemesisReport
	s := data.snap
	add := func(format string, args ...any) {
		rep.violations = append(rep.violations, fmt.Sprintf(format, args...))
	}
	rep.violations = append(rep.violations, invariants(s, invoicesJob, nemesisClients)...)
	rep.slots = len(s.runs)

	if settled {
		for _, r := range s.runs {
			if r.Status == "running" {
				add("%s slot %s is still running (token %d, attempt %d) after the jobs were paused", r.Job, stamp(r.Slot), r.Token, r.Attempt)
			}
		}
		for slot, r := range s.slotRuns(invoicesJob) {
			if n := len(s.invoicesOf(slot)); n > 0 && r.Status != "succeeded" {
				add("slot %s billed %d invoices but is %s (%s)", stamp(slot), n, r.Status, r.Reason)
			}
		}
	}

	// The exec job.
	fence := fenceTerms(s.fencesOf(markerJob))
	runs := s.slotRuns(markerJob)
	bySlot := map[time.Time][]mark{}
	for _, m := range data.marks {
		bySlot[m.Slot] = append(bySlot[m.Slot], m)
		if _, ok := fence.raisedAt(m.Token); !ok {
			add("%s slot %s executed under token %d, which no term raised", markerJob, stamp(m.Slot), m.Token)
		}
	}
	for slot, ms := range bySlot {
		r, ok := runs[slot]
		switch {
		case !ok:
			add("%s slot %s executed %d times but has no ledger row", markerJob, stamp(slot), len(ms))
			continue
		case r.Status == "missed" || r.Status == "skipped":
			add("%s slot %s is %s (%s) but executed %d times", markerJob, stamp(slot), r.Status, r.Reason, len(ms))
		}
		tokens := map[int64]int{}
		for _, m := range ms {
			tokens[m.Token]++
			if tokens[m.Token] == 2 {
				add("%s slot %s executed twice under token %d", markerJob, stamp(slot), m.Token)
			}
		}
		if len(tokens) > 1 {
			rr := rerun{slot: slot}
			for tok := range tokens {
				rr.tokens = append(rr.tokens, tok)
			}
			sort.Slice(rr.tokens, func(i, j int) bool { return rr.tokens[i] < rr.tokens[j] })
			rep.reruns = append(rep.reruns, rr)
		}
	}
	for slot, r := range runs {
		if r.Status == "succeeded" && len(bySlot[slot]) == 0 {
			add("%s slot %s succeeded (token %d, attempt %d) but never executed to its end", markerJob, stamp(slot), r.Token, r.Attempt)
		}
	}
	sort.Slice(rep.reruns, func(i, j int) bool { return rep.reruns[i].slot.Before(rep.reruns[j].slot) })

	// The sql job.
	fence = fenceTerms(s.fencesOf(rowsJob))
	runs = s.slotRuns(rowsJob)
	rowsOf := map[time.Time][]slotRow{}
	for _, row := range data.rows {
		rowsOf[row.Slot] = append(rowsOf[row.Slot], row)
		if v := fence.staleWrite(row.Token, row.At); v != "" {
			add("%s slot %s: row %s", rowsJob, stamp(row.Slot), v)
		}
	}
	for slot, rs := range rowsOf {
		r, ok := runs[slot]
		switch {
		case !ok:
			add("%s slot %s has %d rows but no ledger row", rowsJob, stamp(slot), len(rs))
		case r.Status == "missed" || r.Status == "skipped":
			add("%s slot %s is %s (%s) but has %d rows", rowsJob, stamp(slot), r.Status, r.Reason, len(rs))
		case len(rs) > 1:
			add("%s slot %s has %d rows (tokens %v), want one", rowsJob, stamp(slot), len(rs), rowTokens(rs))
		case rs[0].Token > r.Token:
			add("%s slot %s: row of token %d, newer than the run's token %d", rowsJob, stamp(slot), rs[0].Token, r.Token)
		}
	}
	for slot, r := range runs {
		if r.Status == "succeeded" && len(rowsOf[slot]) != 1 {
			add("%s slot %s succeeded (token %d) with %d rows, want one", rowsJob, stamp(slot), r.Token, len(rowsOf[slot]))
		}
	}

	if settled {
		dups, problems := checkEmails(s, data.emails)
		rep.duplicates = dups
		rep.violations = append(rep.violations, problems...)
	}
	problems, urep := checkUntrusted(data, settled)
	rep.violations = append(rep.violations, problems...)
	rep.untrusted = urep
	return rep
}

// outboxFence is the fence of the outbox's dispatcher, raised by each term on its own.
const outboxFence = "@outbox"

// jobFences returns s with the raises of the jobs' fences only. A new leader raises every job's
// fence in one transaction, but its dispatcher raises the outbox's on its own, maybe first: a
// write of an older term to a job whose fence is still its own is accepted in between, as the
// fence of each job promises, and is no stale write.
func (s snapshot) jobFences() snapshot {
	out := s
	out.raises = nil
	for _, r := range s.raises {
		if r.Job != outboxFence {
			out.raises = append(out.raises, r)
		}
	}
	return out
}

// fencesOf returns s with the raises of job's fence only.
func (s snapshot) fencesOf(job string) snapshot {
	out := s
	out.raises = nil
	for _, r := range s.raises {
		if r.Job == job {
			out.raises = append(out.raises, r)
		}
	}
	return out
}

func rowTokens(rs []slotRow) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.Token)
	}
	return out
}

// fenceIndex is each token's first raise of the fence, by the store's clock.
type fenceIndex struct {
	at     map[int64]time.Time
	tokens []int64 // ascending
}

func fenceTerms(s snapshot) fenceIndex {
	f := fenceIndex{at: map[int64]time.Time{}}
	for _, r := range s.raises {
		if at, ok := f.at[r.Token]; !ok || r.At.Before(at) {
			f.at[r.Token] = r.At
		}
	}
	for tok := range f.at {
		f.tokens = append(f.tokens, tok)
	}
	sort.Slice(f.tokens, func(i, j int) bool { return f.tokens[i] < f.tokens[j] })
	return f
}

func (f fenceIndex) raisedAt(token int64) (time.Time, bool) {
	at, ok := f.at[token]
	return at, ok
}

// staleWrite describes a write under token committed at at outside its term, or returns "".
func (f fenceIndex) staleWrite(token int64, at time.Time) string {
	raised, ok := f.at[token]
	switch {
	case !ok:
		return fmt.Sprintf("written under token %d, which no term raised", token)
	case at.Before(raised):
		return fmt.Sprintf("written under token %d at %s, before its term raised the fence at %s", token, stamp(at), stamp(raised))
	}
	for _, tok := range f.tokens {
		if tok > token && !at.Before(f.at[tok]) {
			return fmt.Sprintf("stale write: token %d written at %s, after token %d raised the fence at %s", token, stamp(at), tok, stamp(f.at[tok]))
		}
	}
	return ""
}

// upTo returns the part of data committed before at, with the runs started or finished after
// at counted as running: a consistent view for a check while the replicas run, whose tables are read one
// after the other (a slot claimed and billed between two reads would look unclaimed).
func (data nemesisData) upTo(at time.Time) nemesisData {
	out := nemesisData{emails: data.emails, untrusted: data.untrusted.upTo(at)}
	for _, r := range data.snap.runs {
		if (r.Started != nil && !r.Started.Before(at)) || (r.Finished != nil && !r.Finished.Before(at)) {
			r.Status = "running"
		}
		out.snap.runs = append(out.snap.runs, r)
	}
	for _, i := range data.snap.invoices {
		if i.Created.Before(at) {
			out.snap.invoices = append(out.snap.invoices, i)
		}
	}
	for _, r := range data.snap.raises {
		if r.At.Before(at) {
			out.snap.raises = append(out.snap.raises, r)
		}
	}
	for _, w := range data.snap.writes {
		if w.At.Before(at) {
			out.snap.writes = append(out.snap.writes, w)
		}
	}
	for _, m := range data.marks {
		if m.At.Before(at) {
			out.marks = append(out.marks, m)
		}
	}
	for _, r := range data.rows {
		if r.At.Before(at) {
			out.rows = append(out.rows, r)
		}
	}
	return out
}
