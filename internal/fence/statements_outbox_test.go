package fence

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"scheduler"
)

// sqlJobEnqueue is the README's pattern for a sql job that queues an e-mail: its job, token and
// slot come from the transaction's settings, which the store sets before the text runs.
const sqlJobEnqueue = `SELECT scheduler.outbox_enqueue(current_setting('scheduler.job'),
	current_setting('scheduler.token')::bigint,
	'report.daily.' || extract(epoch FROM current_setting('scheduler.slot')::timestamptz)::bigint, 'email', 'ops@example.test',
	'daily report', 'all good', current_setting('scheduler.slot')::timestamptz,
	current_setting('scheduler.manual')::boolean)`

// TestPostgres_StatementsEnqueueWithTheirSettings checks that a sql job's text can queue a
// message for its own job, token and slot, and that a stale token queues nothing.
func TestPostgres_StatementsEnqueueWithTheirSettings(t *testing.T) {
	s, _ := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	if err := s.RaiseAll(ctx, []string{"report"}, 10); err != nil {
		t.Fatal(err)
	}
	slot := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	res, err := s.ClaimMany(ctx, 10, "n1", []scheduler.SlotKey{{Job: "report", At: slot}, {Job: "report", At: slot.Add(time.Hour)}})
	if err != nil || len(res) != 2 {
		t.Fatalf("claim the runs: %v (err %v)", res, err)
	}
	a := scheduler.Attempt{Job: "report", Token: 10, Slot: slot, Attempt: 1, RunID: strconv.FormatInt(res[0].Run.RunID, 10), Fencer: s}
	if _, err := a.FencedStatements(ctx, "", sqlJobEnqueue); err != nil {
		t.Fatalf("statements with outbox_enqueue: %v", err)
	}
	msgs, err := s.Outbox(ctx, "", 10)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("outbox = %+v (err %v), want the one message", msgs, err)
	}
	if m := msgs[0]; m.Job != "report" || m.Token != 10 || !m.ScheduledAt.Equal(slot) || m.Manual {
		t.Fatalf("message = %+v, want job report, token 10, slot %s, not manual", m, slot)
	}

	// A newer leader raised the fence: the old term's text queues nothing.
	if err := s.RaiseAll(ctx, []string{"report"}, 11); err != nil {
		t.Fatal(err)
	}
	stale := a
	stale.Slot, stale.RunID = slot.Add(time.Hour), strconv.FormatInt(res[1].Run.RunID, 10)
	if _, err := stale.FencedStatements(ctx, "", sqlJobEnqueue); !errors.Is(err, ErrStale) {
		t.Fatalf("stale statements: err %v, want ErrStale", err)
	}
	if msgs, err := s.Outbox(ctx, "", 10); err != nil || len(msgs) != 1 {
		t.Fatalf("outbox after the stale text = %d messages (err %v), want still 1", len(msgs), err)
	}
	// Without a slot in the context the setting is empty and the function refuses the message.
	if _, err := s.FencedStatements(context.Background(), "report", 11, "", sqlJobEnqueue); err == nil {
		t.Fatal("statements without a slot queued a message, want a refusal")
	}
}
