package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"scheduler"
)

// TestOutboxCmd: `outbox` lists the messages by status, as a table or JSON; `outbox retry`
// revives a dead message and refuses any other; `history --json` shows a run's messages.
func TestOutboxCmd(t *testing.T) {
	forEachDaemonStore(t, "outbox: {log: true}\n", func(t *testing.T, c *cluster) {
		d := buildDaemon(t, c)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		const token = 5
		queueEmails(ctx, t, d, token, 2)
		slot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if _, err := d.store.ClaimMany(ctx, token, "a", []scheduler.SlotKey{{Job: "yearly", At: slot}}); err != nil {
			t.Fatal(err)
		}
		claimed, err := d.store.ClaimOutbox(ctx, token, 1, time.Now())
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim = %v, %v", claimed, err)
		}
		dead := claimed[0].Key
		if err := d.store.RecordDelivery(ctx, token, dead, scheduler.Delivery{Outcome: scheduler.DeliveryDead, Error: "550 no such user", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		d.store.Close()

		code, out, errOut := runCLI(t, "outbox", "--config", c.path, "--status", "dead", "--json")
		if code != 0 {
			t.Fatalf("outbox --status dead --json: %d %s", code, errOut)
		}
		var msgs []messageJSON
		if err := json.Unmarshal([]byte(out), &msgs); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		if len(msgs) != 1 || msgs[0].Key != dead || msgs[0].Status != "dead" || msgs[0].LastError != "550 no such user" || msgs[0].Attempts != 1 {
			t.Fatalf("dead messages = %+v, want %s", msgs, dead)
		}
		code, out, _ = runCLI(t, "outbox", "--config", c.path)
		if code != 0 || !strings.Contains(out, "KEY") || !strings.Contains(out, "yearly.1") || !strings.Contains(out, "yearly.2") {
			t.Fatalf("outbox: %d\n%s", code, out)
		}
		if code, _, errOut := runCLI(t, "outbox", "--config", c.path, "--status", "lost"); code != 2 || !strings.Contains(errOut, "--status") {
			t.Fatalf("outbox --status lost: %d %s, want a usage error", code, errOut)
		}

		if code, out, errOut := runCLI(t, "outbox", "retry", dead, "--config", c.path); code != 0 || !strings.Contains(out, "queued again") {
			t.Fatalf("outbox retry: %d %s %s", code, out, errOut)
		}
		if code, _, errOut := runCLI(t, "outbox", "retry", dead, "--config", c.path); code == 0 || !strings.Contains(errOut, "not dead") {
			t.Fatalf("outbox retry of a pending message: %d %s, want a refusal", code, errOut)
		}
		code, out, _ = runCLI(t, "outbox", "--config", c.path, "--status", "pending", "--json")
		if err := json.Unmarshal([]byte(out), &msgs); code != 0 || err != nil || len(msgs) != 2 {
			t.Fatalf("pending after the retry: %d %v %s", code, err, out)
		}

		code, out, errOut = runCLI(t, "history", "yearly", "--config", c.path, "--json")
		if code != 0 {
			t.Fatalf("history --json: %d %s", code, errOut)
		}
		var runs []struct {
			Job    string        `json:"job"`
			Status string        `json:"status"`
			Outbox []messageJSON `json:"outbox"`
		}
		if err := json.Unmarshal([]byte(out), &runs); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		if len(runs) != 1 || runs[0].Job != "yearly" || runs[0].Status == "" || len(runs[0].Outbox) != 2 ||
			runs[0].Outbox[0].Destination != "client-1@example.test" {
			t.Fatalf("history = %+v, want the run with its 2 messages", runs)
		}
	})
}
