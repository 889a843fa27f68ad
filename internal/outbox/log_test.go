package outbox

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestLog_Deliver(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	l := NewLog(zap.New(core))
	if err := l.Deliver(context.Background(), email("invoices/1", "client-1@example.test"), 7); err != nil {
		t.Fatal(err)
	}
	entries := logs.FilterMessage("message logged").All()
	if len(entries) != 1 {
		t.Fatalf("%d log entries, want 1", len(entries))
	}
	f := entries[0].ContextMap()
	if f["key"] != "invoices/1" || f["destination"] != "client-1@example.test" || f["token"] != int64(7) || f["subject"] != "Invoice invoices/1" {
		t.Fatalf("logged fields = %v", f)
	}
}
