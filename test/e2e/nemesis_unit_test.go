package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// TestNemesisCheck runs the nemesis's checker on hand-made histories: a clean one, one with each
// kind of violation it must see, and the reruns it must count without calling them violations.
func TestNemesisCheck(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	slot := t0.Add(10 * time.Second)
	at := func(d time.Duration) *time.Time { v := slot.Add(d); return &v }
	clean := func() nemesisData {
		var data nemesisData
		for _, job := range append([]string{outboxFence}, nemesisJobNames...) {
			data.snap.raises = append(data.snap.raises, raise{Job: job, Token: 5, Writer: "e2e-a", At: t0}, raise{Job: job, Token: 9, Writer: "e2e-b", At: t0.Add(time.Minute)})
		}
		for i, job := range nemesisJobNames {
			data.snap.runs = append(data.snap.runs, ledgerRow{RunID: int64(i + 1), Job: job, Slot: slot, Status: "succeeded", Token: 5, Node: "a", Attempt: 1,
				Started: at(0), Finished: at(2 * time.Second)})
		}
		for c := 1; c <= nemesisClients; c++ {
			data.snap.invoices = append(data.snap.invoices, invoice{Client: c, Month: slot.Format(time.RFC3339), Token: 5, Created: slot.Add(time.Duration(c) * 100 * time.Millisecond)})
			data.emails = append(data.emails, testenv.SMTPMessage{To: []string{fmt.Sprintf("client-%d@example.test", c)}, MessageID: "<" + invoiceKey(slot, c) + "@example.test>"})
		}
		data.marks = []mark{{Slot: slot, Token: 5, Attempt: 1, At: slot.Add(time.Second)}}
		data.rows = []slotRow{{Slot: slot, Token: 5, At: slot.Add(10 * time.Millisecond)}}
		data.untrusted.requests = []hookRequest{{At: slot.Add(20 * time.Millisecond), Key: "4", Token: 5, Slot: slot, Status: http.StatusOK}}
		data.untrusted.granted = map[int64]bool{5: true, 7: true, 9: true}
		return data
	}
	setStatus := func(data *nemesisData, job, status string) {
		for i := range data.snap.runs {
			if data.snap.runs[i].Job == job {
				data.snap.runs[i].Status = status
			}
		}
	}
	tests := []struct {
		name   string
		change func(*nemesisData)
		want   string // part of a violation; "" for none
		reruns int
	}{
		{"Clean", func(*nemesisData) {}, "", 0},
		{"ExecRerunUnderANewTerm", func(d *nemesisData) {
			d.marks = append(d.marks, mark{Slot: slot, Token: 9, Attempt: 2, At: t0.Add(2 * time.Minute)})
		}, "", 1},
		{"ExecTwiceUnderOneToken", func(d *nemesisData) {
			d.marks = append(d.marks, mark{Slot: slot, Token: 5, Attempt: 1, At: slot.Add(3 * time.Second)})
		}, "executed twice under token 5", 0},
		{"ExecForAMissedSlot", func(d *nemesisData) { setStatus(d, markerJob, "missed") }, "is missed", 0},
		{"ExecWithoutALedgerRow", func(d *nemesisData) {
			d.marks = append(d.marks, mark{Slot: slot.Add(time.Hour), Token: 5, Attempt: 1})
		}, "has no ledger row", 0},
		{"ExecUnderAnUnknownToken", func(d *nemesisData) { d.marks[0].Token = 7 }, "which no term raised", 0},
		{"ExecSucceededWithoutEffect", func(d *nemesisData) { d.marks = nil }, "never executed to its end", 0},
		{"SQLRowTwice", func(d *nemesisData) {
			d.rows = append(d.rows, slotRow{Slot: slot, Token: 5, At: slot.Add(time.Second)})
		}, "has 2 rows", 0},
		{"SQLRowForASkippedSlot", func(d *nemesisData) { setStatus(d, rowsJob, "skipped") }, "is skipped", 0},
		{"SQLRowStale", func(d *nemesisData) { d.rows[0].At = t0.Add(2 * time.Minute) }, "stale write", 0},
		{"SQLSucceededWithoutRow", func(d *nemesisData) { d.rows = nil }, "with 0 rows", 0},
		{"BilledButFailed", func(d *nemesisData) { setStatus(d, invoicesJob, "failed") }, "billed 10 invoices but is failed", 0},
		{"StillRunning", func(d *nemesisData) { setStatus(d, rowsJob, "running") }, "still running", 0},
		{"EmailWithoutInvoice", func(d *nemesisData) {
			d.emails = append(d.emails, testenv.SMTPMessage{To: []string{"client-1@example.test"}, MessageID: "<" + invoiceKey(slot.Add(time.Hour), 1) + "@example.test>"})
		}, "has no invoice row", 0},
		{"EmailMissing", func(d *nemesisData) { d.emails = d.emails[1:] }, "no e-mail received", 0},
		{"InvoiceMissing", func(d *nemesisData) { d.snap.invoices = d.snap.invoices[1:] }, "with 9 invoices", 0},
		{"OutboxFenceRaisedFirst", func(d *nemesisData) {
			// The next term's dispatcher raised the outbox's fence before the next term raised the
			// jobs': the older term's writes of the jobs in between pass their fences.
			d.snap.raises = append(d.snap.raises, raise{Job: outboxFence, Token: 7, Writer: "e2e-c", At: slot})
		}, "", 0},
		{"InvoiceAfterTheNextTermRaisedTheJobsFence", func(d *nemesisData) {
			d.snap.raises = append(d.snap.raises, raise{Job: invoicesJob, Token: 7, Writer: "e2e-c", At: slot})
		}, "stale write", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := clean()
			tt.change(&data)
			rep := checkNemesis(data, true)
			if rep.slots != len(nemesisJobNames) && tt.name == "Clean" {
				t.Errorf("slots=%d, want %d", rep.slots, len(nemesisJobNames))
			}
			if len(rep.reruns) != tt.reruns {
				t.Errorf("reruns=%v, want %d", rep.reruns, tt.reruns)
			}
			got := strings.Join(rep.violations, "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("violations:\n%s\nwant none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("violations:\n%s\nwant one containing %q", got, tt.want)
			}
		})
	}
}

// TestNemesisCheck_UpTo checks that a check while the replicas run sees a consistent history:
// what committed after the moment of the check is left out, and a run finished after it counts
// as running, so a slot billed in between reads as in progress, not as a violation.
func TestNemesisCheck_UpTo(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	slot := t0.Add(10 * time.Second)
	fin := slot.Add(2 * time.Second)
	var data nemesisData
	data.snap.raises = []raise{{Job: invoicesJob, Token: 5, Writer: "e2e-a", At: t0}}
	data.snap.runs = []ledgerRow{{Job: invoicesJob, Slot: slot, Status: "succeeded", Token: 5, Attempt: 1, Started: &slot, Finished: &fin}}
	for c := 1; c <= nemesisClients; c++ {
		data.snap.invoices = append(data.snap.invoices, invoice{Client: c, Month: slot.Format(time.RFC3339), Token: 5, Created: slot.Add(time.Duration(c) * 150 * time.Millisecond)})
	}
	if v := checkNemesis(data.upTo(slot.Add(time.Second)), false).violations; len(v) != 0 {
		t.Errorf("violations in the middle of the run:\n%s\nwant none", strings.Join(v, "\n"))
	}
	if v := checkNemesis(data.upTo(slot.Add(time.Second)), true).violations; len(v) == 0 {
		t.Error("no violation for a run left in progress once settled, want one")
	}
}

// TestNemesisDraws checks that a seed replays the nemesis's choices and another seed does not.
func TestNemesisDraws(t *testing.T) {
	seq := func(seed uint64, backend string) []draw {
		rng := nemesisRand(seed, backend)
		var out []draw
		for range 50 {
			out = append(out, nextDraw(rng))
		}
		return out
	}
	a, b := seq(42, "etcd"), seq(42, "etcd")
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d: %+v then %+v under one seed, want the same", i, a[i], b[i])
		}
	}
	if c := seq(43, "etcd"); c[0] == a[0] && c[1] == a[1] {
		t.Errorf("seeds 42 and 43 drew %+v, want different draws", c[:2])
	}
	if c := seq(42, "redis"); c[0] == a[0] {
		t.Errorf("backends etcd and redis drew %+v under one seed, want a sequence per backend", c[0])
	}
}

// TestNemesisCheck_Untrusted runs the checks of the receiver's refusals and the job role's
// attacks on hand-made histories: each violation they must see, and what they must accept (a
// refused run fenced, a slot sent again under a newer term, a held job caught up).
func TestNemesisCheck_Untrusted(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	slot := t0.Add(10 * time.Second)
	at := func(d time.Duration) *time.Time { v := slot.Add(d); return &v }
	base := func() nemesisData {
		var data nemesisData
		for _, job := range nemesisJobNames {
			data.snap.raises = append(data.snap.raises, raise{Job: job, Token: 5, Writer: "e2e-a", At: t0}, raise{Job: job, Token: 9, Writer: "e2e-b", At: t0.Add(time.Minute)})
		}
		for i, job := range []string{rowsJob, hookJob} {
			data.snap.runs = append(data.snap.runs, ledgerRow{RunID: int64(i + 1), Job: job, Slot: slot, Status: "succeeded", Token: 5, Node: "a", Attempt: 1,
				Started: at(0), Finished: at(time.Second)})
		}
		data.rows = []slotRow{{Slot: slot, Token: 5, At: slot.Add(10 * time.Millisecond)}}
		data.untrusted.requests = []hookRequest{{At: slot.Add(20 * time.Millisecond), Key: "2", Token: 5, Slot: slot, Status: http.StatusOK}}
		data.untrusted.granted = map[int64]bool{5: true, 9: true}
		return data
	}
	hookRun := func(d *nemesisData) *ledgerRow {
		for i := range d.snap.runs {
			if d.snap.runs[i].Job == hookJob {
				return &d.snap.runs[i]
			}
		}
		t.Fatal("no run of the http job")
		return nil
	}
	refuse := func(d *nemesisData) {
		d.untrusted.requests[0].Status = http.StatusConflict
		r := hookRun(d)
		r.Status, r.Reason = "fenced", refusedReason
	}
	quiet := func(d *nemesisData) {
		d.untrusted.refusals = []refusal{{from: slot.Add(-time.Second), to: slot.Add(3 * time.Second), leader: 5, quiet: true}}
	}
	held := func(d *nemesisData, narrow bool) {
		d.untrusted.holds = []heldFence{{fenceHold: fenceHold{job: hookJob, from: t0.Add(50 * time.Second), to: t0.Add(70 * time.Second), takeover: true},
			takeovers: []takeover{{token: 9, won: t0.Add(time.Minute)}}, term: 9, won: t0.Add(time.Minute), narrowJudged: narrow}}
	}
	started := func(d *nemesisData, job string, after time.Duration) {
		if d.untrusted.starts == nil {
			d.untrusted.starts = map[string][]runStart{}
		}
		d.untrusted.starts[job] = append(d.untrusted.starts[job], runStart{node: "b", slot: t0.Add(after).Truncate(nemesisEvery), at: t0.Add(after), token: 9, attempt: 1})
	}
	tests := []struct {
		name       string
		change     func(*nemesisData)
		want       string // part of a violation; "" for none
		hookReruns int
		quiet      int
		holds      int
		// ends and caught, when set, are the terms ended within a refusal (all explained) and
		// the takeovers during a hold that caught the held job up.
		ends, caught int
	}{
		{"Clean", func(*nemesisData) {}, "", 0, 0, 0, 0, 0},
		{"RefusedRunFenced", refuse, "", 0, 0, 0, 0, 0},
		{"RefusedRunRetried", func(d *nemesisData) {
			refuse(d)
			d.untrusted.requests = append(d.untrusted.requests, hookRequest{At: slot.Add(time.Second), Key: "2", Token: 5, Slot: slot, Status: http.StatusOK})
		}, "second request under token 5", 0, 0, 0, 0, 0},
		{"RefusedRunSucceeded", func(d *nemesisData) { d.untrusted.requests[0].Status = http.StatusConflict }, "refused under token 5 but succeeded", 0, 0, 0, 0, 0},
		{"FencedWithoutRefusal", func(d *nemesisData) {
			r := hookRun(d)
			r.Status, r.Reason = "fenced", refusedReason
		}, "refused no request of it", 0, 0, 0, 0, 0},
		{"AcceptedRunFailed", func(d *nemesisData) { hookRun(d).Status = "failed" }, "accepted under token 5 but failed", 0, 0, 0, 0, 0},
		{"SucceededWithoutRequest", func(d *nemesisData) { d.untrusted.requests = nil }, "accepted no request of it", 0, 0, 0, 0, 0},
		{"RequestUnderAnUnknownToken", func(d *nemesisData) { d.untrusted.requests[0].Token = 7 }, "which no term raised", 0, 0, 0, 0, 0},
		{"RequestForASkippedSlot", func(d *nemesisData) { hookRun(d).Status = "skipped" }, "is skipped", 0, 0, 0, 0, 0},
		{"SentAgainUnderANewTerm", func(d *nemesisData) {
			r := hookRun(d)
			r.Token = 9
			d.untrusted.requests = append(d.untrusted.requests, hookRequest{At: t0.Add(2 * time.Minute), Key: "2", Token: 9, Slot: slot, Status: http.StatusOK})
		}, "", 1, 0, 0, 0, 0},
		{"OtherJobEndsRefused", func(d *nemesisData) {
			d.snap.runs[0].Status, d.snap.runs[0].Reason = "fenced", refusedReason
		}, "only the http job has a receiver", 0, 0, 0, 0, 0},
		{"TermEndedOnARefusal", func(d *nemesisData) {
			d.untrusted.ends = []logEntry{{TS: slot.Add(time.Second), Msg: "leadership ended", Node: "a", Token: 5, Reason: "lead_failed",
				Error: "run hook: POST http://127.0.0.1/hook: 409 Conflict: scheduler: the receiver refused the token"}}
		}, "ended on a receiver's refusal", 0, 0, 0, 0, 0},
		{"QuietRefusal", func(d *nemesisData) { refuse(d); quiet(d) }, "", 0, 1, 0, 0, 0},
		{"QuietRefusalTermEnds", func(d *nemesisData) {
			refuse(d)
			quiet(d)
			d.untrusted.ends = []logEntry{{TS: slot.Add(2 * time.Second), Msg: "leadership ended", Node: "a", Token: 5, Reason: "lead_failed"}}
		}, "leadership ended (token 5)", 0, 1, 0, 0, 0},
		{"QuietRefusalOtherJobFailed", func(d *nemesisData) {
			refuse(d)
			quiet(d)
			d.snap.runs[0].Status = "failed"
		}, "rows slot", 0, 1, 0, 0, 0},
		{"TermEndedWithinARefusal", func(d *nemesisData) {
			refuse(d)
			quiet(d)
			d.untrusted.refusals[0].quiet = false
			d.untrusted.ends = []logEntry{{TS: slot.Add(time.Second), Msg: "leadership ended", Node: "a", Token: 5, Reason: "lead_failed"}}
		}, "with no other fault in force", 0, 0, 0, 0, 0},
		{"TermEndedWithinARefusalExplained", func(d *nemesisData) {
			refuse(d)
			quiet(d)
			d.untrusted.refusals[0].quiet = false
			d.untrusted.ends = []logEntry{{TS: slot.Add(time.Second), Msg: "leadership ended", Node: "a", Token: 5, Reason: "lease_gone"}}
			d.untrusted.others = []interval{{from: slot.Add(-3 * time.Second), to: slot.Add(-time.Second)}}
		}, "", 0, 0, 0, 1, 0},
		{"QuietRefusalNotAlone", func(d *nemesisData) {
			refuse(d)
			quiet(d)
			d.untrusted.refusals[0].quiet = false
			d.snap.runs[0].Status = "failed"
		}, "", 0, 0, 0, 0, 0},
		{"FenceTokenNoTermWasGranted", func(d *nemesisData) {
			d.snap.raises = append(d.snap.raises, raise{Job: rowsJob, Token: outsideFence, Writer: "e2e-role", At: t0.Add(2 * time.Minute)})
		}, "which no term was granted", 0, 0, 0, 0, 0},
		{"HeldFenceCaughtUp", func(d *nemesisData) {
			held(d, false)
			started(d, hookJob, 75*time.Second)
		}, "", 0, 0, 1, 0, 1},
		{"HeldFenceNotCaughtUp", func(d *nemesisData) { held(d, false) }, "started no run of it", 0, 0, 1, 0, 0},
		{"HeldFenceCaughtUpTooLate", func(d *nemesisData) {
			held(d, false)
			started(d, hookJob, 70*time.Second+catchUpWithin+time.Second)
		}, "started no run of it", 0, 0, 1, 0, 0},
		{"HeldFenceNarrowed", func(d *nemesisData) {
			held(d, true)
			started(d, hookJob, 75*time.Second)
			for _, job := range []string{invoicesJob, markerJob, rowsJob} {
				started(d, job, 65*time.Second)
			}
		}, "", 0, 0, 1, 0, 0},
		{"HeldFenceNotNarrowed", func(d *nemesisData) {
			held(d, true)
			started(d, hookJob, 75*time.Second)
			started(d, rowsJob, 65*time.Second)
		}, "ran no [marker]", 0, 0, 1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := base()
			tt.change(&data)
			got, rep := checkUntrusted(data, true)
			if rep.hookReruns != tt.hookReruns || rep.quietJudged != tt.quiet || rep.holdsJudged != tt.holds {
				t.Errorf("report %+v, want %d reruns, %d refusals judged alone, %d holds judged", rep, tt.hookReruns, tt.quiet, tt.holds)
			}
			if tt.ends > 0 && (rep.refusalEnds != tt.ends || rep.explained != tt.ends) {
				t.Errorf("report %+v, want %d terms ended within a refusal, all explained", rep, tt.ends)
			}
			if tt.caught > 0 && (rep.takeovers < tt.caught || rep.caughtUp != tt.caught) {
				t.Errorf("report %+v, want %d takeovers during a hold that caught the job up", rep, tt.caught)
			}
			all := strings.Join(got, "\n")
			switch {
			case tt.want == "" && all != "":
				t.Errorf("violations:\n%s\nwant none", all)
			case tt.want != "" && !strings.Contains(all, tt.want):
				t.Errorf("violations:\n%s\nwant one containing %q", all, tt.want)
			}
		})
	}
}
