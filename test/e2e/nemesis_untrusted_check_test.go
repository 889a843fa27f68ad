package e2e

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// untrustedData is what the checker reads of the untrusted parties' faults: the receiver's own
// log, the stretches in which it refused, the job role's fence holds, and from the replicas'
// logs the tokens granted, the terms' ends and the runs started.
type untrustedData struct {
	requests []hookRequest
	refusals []refusal
	holds    []heldFence
	granted  map[int64]bool        // nil: not known (a hand-made history without logs)
	ends     []logEntry            // "leadership ended" and "campaign won" lines
	others   []interval            // the spans of the faults but the receiver's refusals
	starts   map[string][]runStart // by job
}

// untrustedReport is what checkUntrusted found besides violations.
type untrustedReport struct {
	hookReruns  int // slots the receiver saw under more than one term
	quietJudged int // refusals judged alone: no other fault near them
	// refusalEnds are the terms that ended within a refusal, explained those with another fault
	// in force shortly before.
	refusalEnds, explained int
	holdsJudged            int // fence holds with a takeover judged for the catch-up
	// takeovers are the terms won while a fence was held, caughtUp those that started the held
	// job within catchUpWithin of the hold's end.
	takeovers, caughtUp int
}

// checkUntrusted checks the receiver's refusals and the job role's attacks:
//
//   - the receiver saw at most one request per slot and term, each under a token that raised
//     the http job's fence, for a slot of the ledger that was not missed or skipped;
//   - a refused request's run, when it is still the term's, ended fenced with refusedReason (not
//     retried: see above), an accepted one's succeeded; conversely a run fenced so was refused, a
//     succeeded one accepted; no other job's run ends so;
//   - no term ended on a refusal (its error), nor within one (settled) unless another fault was
//     in force within explainWithin before it; a refusal judged alone (refusal.quiet, settled):
//     no term won or ended within it, and every slot of every job due within it ran in the
//     term that led as it began, the other jobs' succeeded;
//   - every raise of a fence carries a token some term was granted;
//   - settled: a term that took over while the job role held a fence started the held job
//     within catchUpWithin of the hold's end, and ran the other jobs (but the invoices, which
//     queue behind the killed leader's run) meanwhile when one of their slots fell due in its
//     part of the hold with no other fault in force (the raise narrowed to the held job).
func checkUntrusted(data nemesisData, settled bool) ([]string, untrustedReport) {
	var (
		out []string
		rep untrustedReport
	)
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	s, u := data.snap, data.untrusted
	fence := fenceTerms(s.fencesOf(hookJob))
	runs := s.slotRuns(hookJob)

	type sent struct {
		key   string
		token int64
	}
	count := map[sent]int{}
	tokensOf := map[string]map[int64]bool{}
	type ran struct {
		slot  time.Time
		token int64
	}
	answered := map[ran]int{} // the status of the request of a slot under a token
	for _, r := range u.requests {
		k := sent{r.Key, r.Token}
		if count[k]++; count[k] == 2 {
			add("%s slot %s: the receiver saw a second request under token %d (run %s)", hookJob, stamp(r.Slot), r.Token, r.Key)
		}
		if tokensOf[r.Key] == nil {
			tokensOf[r.Key] = map[int64]bool{}
		}
		tokensOf[r.Key][r.Token] = true
		answered[ran{r.Slot, r.Token}] = r.Status
		if _, ok := fence.raisedAt(r.Token); !ok {
			add("%s slot %s: request under token %d, which no term raised", hookJob, stamp(r.Slot), r.Token)
		}
		run, ok := runs[r.Slot]
		switch {
		case !ok:
			add("%s slot %s: the receiver saw a request (token %d) but the ledger has no row", hookJob, stamp(r.Slot), r.Token)
			continue
		case run.Status == "missed" || run.Status == "skipped":
			add("%s slot %s is %s (%s) but the receiver saw a request under token %d", hookJob, stamp(r.Slot), run.Status, run.Reason, r.Token)
			continue
		case run.Token != r.Token || run.Status == "running":
			continue // a newer term ran the slot again, or its end is still on its way
		}
		if r.Status == http.StatusConflict && (run.Status != "fenced" || run.Reason != refusedReason) {
			add("%s slot %s: refused under token %d but %s (%s%s) at attempt %d, want fenced (%s)", hookJob, stamp(r.Slot), r.Token, run.Status, run.Reason, run.Error, run.Attempt, refusedReason)
		}
		if r.Status == http.StatusOK && run.Status != "succeeded" {
			add("%s slot %s: accepted under token %d but %s (%s%s), want succeeded", hookJob, stamp(r.Slot), r.Token, run.Status, run.Reason, run.Error)
		}
	}
	for _, tokens := range tokensOf {
		if len(tokens) > 1 {
			rep.hookReruns++
		}
	}
	for slot, run := range runs {
		st, ok := answered[ran{slot, run.Token}]
		switch {
		case run.Status == "fenced" && run.Reason == refusedReason && (!ok || st != http.StatusConflict):
			add("%s slot %s is fenced (%s) under token %d, but the receiver refused no request of it under that token", hookJob, stamp(slot), refusedReason, run.Token)
		case run.Status == "succeeded" && (!ok || st != http.StatusOK):
			add("%s slot %s succeeded under token %d, but the receiver accepted no request of it under that token", hookJob, stamp(slot), run.Token)
		}
	}
	for _, r := range s.runs {
		if r.Job != hookJob && r.Reason == refusedReason {
			add("%s slot %s ended %s (%s): only the http job has a receiver to refuse it", r.Job, stamp(r.Slot), r.Status, r.Reason)
		}
	}

	for _, e := range u.ends {
		if e.Msg == "leadership ended" && strings.Contains(e.Error, "refused the token") {
			add("term %d of %s ended on a receiver's refusal (%s): %s", e.Token, e.Node, e.Reason, e.Error)
		}
	}
	if settled {
		for _, w := range u.refusals {
			for _, e := range u.ends {
				if e.Msg != "leadership ended" || e.TS.Before(w.from) || e.TS.After(w.to) {
					continue
				}
				rep.refusalEnds++
				if overlaps(u.others, e.TS.Add(-explainWithin), e.TS) {
					rep.explained++
					continue
				}
				add("term %d of %s ended (%s) at %s while the receiver refused from %s to %s, with no other fault in force in the %v before",
					e.Token, e.Node, e.Reason, stamp(e.TS), stamp(w.from), stamp(w.to), explainWithin)
			}
			if !w.quiet {
				continue
			}
			rep.quietJudged++
			for _, e := range u.ends {
				if !e.TS.Before(w.from) && !e.TS.After(w.to) {
					add("%s (token %d) at %s, while the receiver refused from %s to %s and no other fault was in force", e.Msg, e.Token, stamp(e.TS), stamp(w.from), stamp(w.to))
				}
			}
			for _, r := range s.runs {
				if r.Manual || r.Slot.Before(w.from) || r.Slot.After(w.to) {
					continue
				}
				if r.Token != w.leader || (r.Job != hookJob && r.Status != "succeeded") {
					add("%s slot %s: %s (%s%s) under token %d, while the receiver refused alone from %s to %s; want %s in the term of token %d",
						r.Job, stamp(r.Slot), r.Status, r.Reason, r.Error, r.Token, stamp(w.from), stamp(w.to), map[bool]string{true: "run", false: "succeeded"}[r.Job == hookJob], w.leader)
				}
			}
		}
	}

	if u.granted != nil {
		for _, r := range s.raises {
			if !u.granted[r.Token] {
				add("the fence of %s carries token %d (written by %s at %s), which no term was granted", r.Job, r.Token, r.Writer, stamp(r.At))
			}
		}
	}

	if settled {
		for _, h := range u.holds {
			for _, tk := range h.takeovers {
				rep.takeovers++
				for _, st := range u.starts[h.job] {
					if st.token == tk.token && !st.at.Before(tk.won) && !st.at.After(h.to.Add(catchUpWithin)) {
						rep.caughtUp++
						break
					}
				}
			}
			if h.term == 0 {
				continue
			}
			rep.holdsJudged++
			caught := false
			others := map[string]bool{}
			for job, starts := range u.starts {
				for _, st := range starts {
					if st.token != h.term || st.at.Before(h.won) {
						continue
					}
					if job == h.job && !st.at.After(h.to.Add(catchUpWithin)) {
						caught = true
					}
					if job != h.job && st.at.Before(h.to) {
						others[job] = true
					}
				}
			}
			if !caught {
				add("%s: its fence held by the job role from %s to %s; the term of token %d, won at %s, started no run of it within %v of the end",
					h.job, stamp(h.from), stamp(h.to), h.term, stamp(h.won), catchUpWithin)
			}
			if h.narrowJudged {
				var missing []string
				for _, job := range nemesisJobNames {
					// The invoices job queues its slots behind the run the killed leader left.
					if job != h.job && job != invoicesJob && !others[job] {
						missing = append(missing, job)
					}
				}
				sort.Strings(missing)
				if len(missing) > 0 {
					add("the fence of %s held by the job role from %s to %s: the term of token %d, won at %s, ran no %v meanwhile (its raise must leave the held job alone)",
						h.job, stamp(h.from), stamp(h.to), h.term, stamp(h.won), missing)
				}
			}
		}
	}
	return out, rep
}

// explainWithin is how long before a term's end another fault must have been in force for it
// to explain the end: a lease outlives its last renewal by a TTL, and a new term's takeover
// waits on the store for about as long again.
const explainWithin = 3 * ttl

// overlaps reports whether one of ivs overlaps from to to.
func overlaps(ivs []interval, from, to time.Time) bool {
	for _, iv := range ivs {
		if iv.from.Before(to) && iv.to.After(from) {
			return true
		}
	}
	return false
}

// upTo returns the part of u seen before at.
func (u untrustedData) upTo(at time.Time) untrustedData {
	out := u
	out.requests = nil
	for _, r := range u.requests {
		if r.At.Before(at) {
			out.requests = append(out.requests, r)
		}
	}
	return out
}
