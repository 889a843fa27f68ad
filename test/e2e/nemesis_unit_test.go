package e2e

import (
	"fmt"
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
			if rep.slots != 3 && tt.name == "Clean" {
				t.Errorf("slots=%d, want 3", rep.slots)
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
