package e2e

import (
	"fmt"
	"sort"
	"time"
)

// invariants checks what must hold in the data whatever the faults were, and returns every
// violation found:
//
//   - each finished slot of the invoices job has exactly clients invoices, clients 1..N, and no
//     invoice carries a token newer than the run that finished the slot;
//   - a slot recorded missed or skipped has no invoice (no slot is both missed and billed), and
//     every invoice belongs to a slot the ledger knows;
//   - a slot still running (in progress when the data was read) or failed has no more than N;
//   - every invoice was written inside its own term: after its token's fence of the job was
//     raised and before the next term raised it (no stale-token row after a takeover);
//   - every write to the ledger or the invoices committed under a fence raised by the same
//     replica (no stale write got through, even one that changed no row); the outbox's fence,
//     which a term raises on its own, is not the fence of these writes.
//
// The ledger's key makes two rows for one slot impossible; the check counts them anyway.
func invariants(s snapshot, job string, clients int) []string {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }

	seen := map[string]bool{}
	for _, r := range s.runs {
		k := fmt.Sprintf("%s %s %v", r.Job, r.Slot.Format(time.RFC3339Nano), r.Manual)
		if seen[k] {
			add("slot %s has two ledger rows", k)
		}
		seen[k] = true
	}

	runs := s.slotRuns(job)
	months := map[string]bool{}
	for slot, r := range runs {
		months[slot.Format(time.RFC3339)] = true
		inv := s.invoicesOf(slot)
		clientsSeen := map[int]bool{}
		for _, i := range inv {
			clientsSeen[i.Client] = true
			if i.Client < 1 || i.Client > clients {
				add("slot %s: invoice for client %d, outside 1..%d", slot.Format(time.RFC3339), i.Client, clients)
			}
			if i.Token > r.Token {
				add("slot %s: invoice of client %d has token %d, newer than the run's token %d", slot.Format(time.RFC3339), i.Client, i.Token, r.Token)
			}
		}
		switch r.Status {
		case "succeeded":
			if len(inv) != clients || len(clientsSeen) != clients {
				add("slot %s succeeded (token %d, attempt %d) with %d invoices, want %d", slot.Format(time.RFC3339), r.Token, r.Attempt, len(inv), clients)
			}
		case "missed", "skipped":
			if len(inv) != 0 {
				add("slot %s is %s (%s) but billed %d invoices", slot.Format(time.RFC3339), r.Status, r.Reason, len(inv))
			}
		default: // running, failed, fenced
			if len(inv) > clients {
				add("slot %s is %s with %d invoices, more than %d", slot.Format(time.RFC3339), r.Status, len(inv), clients)
			}
		}
	}
	for _, i := range s.invoices {
		if !months[i.Month] {
			add("invoice of client %d for %s (token %d) has no run in the ledger", i.Client, i.Month, i.Token)
		}
	}

	// Terms as the job's fence saw them: each token, who raised it and when it was first
	// raised. The invoices are written under the job's fence alone; a term raises the outbox's
	// fence on its own, maybe first, and an older term's invoice committed in between is
	// accepted, as the job's fence promises.
	byToken, tokens := fenceTermsOf(s.fencesOf(job))
	for _, i := range s.invoices {
		ft, ok := byToken[i.Token]
		if !ok {
			add("invoice of client %d for %s has token %d, which no term raised", i.Client, i.Month, i.Token)
			continue
		}
		if i.Created.Before(ft.at) {
			add("invoice of client %d for %s (token %d) written at %s, before its term raised the fence at %s",
				i.Client, i.Month, i.Token, stamp(i.Created), stamp(ft.at))
		}
		for _, tok := range tokens {
			if tok > i.Token && !i.Created.Before(byToken[tok].at) {
				add("stale write: invoice of client %d for %s with token %d written at %s, after token %d (%s) raised the fence at %s",
					i.Client, i.Month, i.Token, stamp(i.Created), tok, byToken[tok].writer, stamp(byToken[tok].at))
				break
			}
		}
	}
	// The audit's fence of a write is the newest of the jobs' fences (auditSQL), whose raises
	// are the terms' here.
	byTerm, _ := fenceTermsOf(s.jobFences())
	for _, w := range s.writes {
		if w.Fence == nil {
			continue
		}
		if owner := byTerm[*w.Fence].writer; owner != w.Writer {
			add("stale write: %s %s by %s committed at %s under fence %d, raised by %s",
				w.Op, w.Table, w.Writer, stamp(w.At), *w.Fence, owner)
		}
	}
	return bad
}

// fenceTerm is a term as a fence saw it: who raised the fence to its token, and when first.
type fenceTerm struct {
	writer string
	at     time.Time
}

// fenceTermsOf returns the terms of s's raises by token, and their tokens in ascending order.
func fenceTermsOf(s snapshot) (map[int64]fenceTerm, []int64) {
	byToken := map[int64]fenceTerm{}
	for _, r := range s.raises {
		if ft, ok := byToken[r.Token]; !ok || r.At.Before(ft.at) {
			byToken[r.Token] = fenceTerm{writer: r.Writer, at: r.At}
		}
	}
	tokens := make([]int64, 0, len(byToken))
	for tok := range byToken {
		tokens = append(tokens, tok)
	}
	sort.Slice(tokens, func(i, j int) bool { return tokens[i] < tokens[j] })
	return byToken, tokens
}

// stamp formats t for messages and timelines.
func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }
