package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestInvariants runs the scenarios' data check on hand-made histories of one takeover in the
// middle of a slot: replica a (token 4) bills clients 1..3, replica b (token 6) takes over. The
// outbox's fence, which b raises on its own, is not the invoices' fence: an invoice of a written
// after b raised the outbox's fence but before b raised the job's is no stale write.
func TestInvariants(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	slot := t0.Add(10 * time.Second)
	ms := func(n int) time.Time { return slot.Add(time.Duration(n) * time.Millisecond) }
	four, six := int64(4), int64(6)
	history := func() snapshot {
		var s snapshot
		s.raises = []raise{
			{Job: outboxFence, Token: 4, Writer: "e2e-a", At: t0},
			{Job: invoicesJob, Token: 4, Writer: "e2e-a", At: t0},
			{Job: outboxFence, Token: 6, Writer: "e2e-b", At: ms(250)},
			{Job: invoicesJob, Token: 6, Writer: "e2e-b", At: ms(300)},
		}
		fin := ms(900)
		s.runs = []ledgerRow{{RunID: 1, Job: invoicesJob, Slot: slot, Status: "succeeded", Token: 6, Node: "b", Attempt: 2, Finished: &fin}}
		month := slot.Format(time.RFC3339)
		s.invoices = []invoice{
			{Client: 1, Month: month, Token: 4, Created: ms(100)},
			{Client: 2, Month: month, Token: 4, Created: ms(270)}, // after the outbox's raise, before the job's
			{Client: 3, Month: month, Token: 6, Created: ms(400)},
		}
		s.writes = []write{
			{Table: "invoices", Op: "INSERT", Writer: "e2e-a", Fence: &four, At: ms(100)},
			{Table: "invoices", Op: "INSERT", Writer: "e2e-a", Fence: &four, At: ms(270)},
			{Table: "invoices", Op: "INSERT", Writer: "e2e-b", Fence: &six, At: ms(400)},
		}
		return s
	}
	tests := []struct {
		name   string
		change func(*snapshot)
		want   string // part of a violation; "" for none
	}{
		{"OutboxFenceRaisedFirst", func(*snapshot) {}, ""},
		{"InvoiceAfterTheJobsFence", func(s *snapshot) { s.invoices[1].Created = ms(310) }, "stale write: invoice of client 2"},
		{"WriteUnderTheNextTermsFence", func(s *snapshot) { s.writes[1].Fence = &six }, "stale write: INSERT invoices by e2e-a"},
		{"InvoiceBeforeItsTerm", func(s *snapshot) { s.invoices[2].Created = ms(290) }, "before its term raised the fence"},
		{"InvoiceUnderAnOutboxOnlyToken", func(s *snapshot) {
			s.raises = append(s.raises, raise{Job: outboxFence, Token: 8, Writer: "e2e-c", At: ms(350)})
			s.invoices[2].Token = 8
		}, "which no term raised"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := history()
			tt.change(&s)
			got := strings.Join(invariants(s, invoicesJob, 3), "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("violations:\n%s\nwant none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("violations:\n%s\nwant one containing %q", got, tt.want)
			}
		})
	}
}
