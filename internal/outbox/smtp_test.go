package outbox

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
)

// email returns an e-mail message with key to rcpt.
func email(key, rcpt string) scheduler.Message {
	return scheduler.Message{Key: key, Job: "invoices", Kind: scheduler.MessageEmail, Destination: rcpt,
		Subject: "Invoice " + key, Body: "Amount due: 10", ScheduledAt: time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC), Token: 7}
}

// TestSMTP_Deliver sends through a real SMTP server in each TLS mode, with and without
// authentication, and checks what the server received.
func TestSMTP_Deliver(t *testing.T) {
	for _, c := range []struct {
		name   string
		server testenv.SMTPOptions
		mode   TLSMode
		auth   bool
	}{
		{"STARTTLSWithAuth", testenv.SMTPOptions{TLS: testenv.SMTPStartTLS, Username: "u", Password: "p"}, STARTTLS, true},
		{"ImplicitTLS", testenv.SMTPOptions{TLS: testenv.SMTPImplicit}, TLS, false},
		{"PlainWithAuthOnLoopback", testenv.SMTPOptions{Username: "u", Password: "p"}, NoTLS, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := testenv.MustSMTP(t, c.server)
			cfg := SMTPConfig{Addr: srv.Addr, From: "Billing <billing@example.test>", TLS: c.mode,
				TLSConfig: &tls.Config{RootCAs: srv.RootCAs, MinVersion: tls.VersionTLS12}, Timeout: 10 * time.Second}
			if c.auth {
				cfg.Username, cfg.Password = "u", "p"
			}
			d, err := NewSMTP(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := d.Deliver(ctx, email("invoices/2026-03/client-1", "client-1@example.test"), 7); err != nil {
				t.Fatalf("deliver: %v", err)
			}
			got := srv.Messages()
			if len(got) != 1 {
				t.Fatalf("server received %d messages, want 1", len(got))
			}
			m := got[0]
			if m.MessageID != "<invoices/2026-03/client-1@example.test>" || m.Subject != "Invoice invoices/2026-03/client-1" ||
				len(m.To) != 1 || m.To[0] != "client-1@example.test" || m.From != "billing@example.test" {
				t.Fatalf("received %+v", m)
			}
			if wantTLS := c.mode != NoTLS; m.TLS != wantTLS {
				t.Fatalf("session TLS = %v, want %v", m.TLS, wantTLS)
			}
			if c.auth && m.User != "u" {
				t.Fatalf("session user = %q, want u", m.User)
			}
		})
	}
}

// TestSMTP_Failures: refusals and broken servers are classified as permanent or retryable.
func TestSMTP_Failures(t *testing.T) {
	srv := testenv.MustSMTP(t, testenv.SMTPOptions{Refuse: func(rcpt string) (int, string) {
		switch rcpt {
		case "gone@example.test":
			return 550, "no such user"
		case "full@example.test":
			return 452, "mailbox full"
		}
		return 0, ""
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plain, err := NewSMTP(SMTPConfig{Addr: srv.Addr, From: "billing@example.test", TLS: NoTLS, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rcpt      string
		permanent bool
	}{
		{"gone@example.test", true},
		{"full@example.test", false},
		{"two@example.test, more@example.test", true},
		{"evil@example.test\r\nBcc: x@example.test", true},
	} {
		err := plain.Deliver(ctx, email("k", c.rcpt), 7)
		if err == nil || IsPermanent(err) != c.permanent {
			t.Errorf("deliver to %q: err %v, want an error, permanent %v", c.rcpt, err, c.permanent)
		}
	}
	// STARTTLS is the default and is required: a server without it is refused, and retried.
	strict, err := NewSMTP(SMTPConfig{Addr: srv.Addr, From: "billing@example.test", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := strict.Deliver(ctx, email("k2", "client-1@example.test"), 7); err == nil || IsPermanent(err) {
		t.Fatalf("deliver with STARTTLS to a server without it: err %v, want a retryable error", err)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("server received %d messages, want 0", n)
	}
	for _, cfg := range []SMTPConfig{
		{Addr: "localhost", From: "a@b.test"},
		{Addr: "localhost:0", From: "a@b.test"},
		{Addr: "localhost:25", From: "not an address"},
		{Addr: "localhost:25", From: "a@b.test", TLS: "ssl"},
	} {
		if _, err := NewSMTP(cfg); err == nil {
			t.Errorf("NewSMTP(%+v): no error", cfg)
		}
	}
}

// TestSMTP_Timeout: a server that accepts the connection and never answers fails the
// delivery within the timeout, as a retryable error.
func TestSMTP_Timeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	defer func() {
		_ = ln.Close()
		for c := range accepted {
			_ = c.Close()
		}
	}()
	d, err := NewSMTP(SMTPConfig{Addr: ln.Addr().String(), From: "billing@example.test", TLS: NoTLS, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Deliver(ctx, email("k", "client-1@example.test"), 7); err == nil || IsPermanent(err) {
		t.Fatalf("deliver to a silent server: err %v, want a retryable error", err)
	}
}

// TestSMTP_RefusesHeaderInjection: a line break in a job's recipient or subject is a
// permanent failure, and nothing reaches the real server.
func TestSMTP_RefusesHeaderInjection(t *testing.T) {
	srv := testenv.MustSMTP(t, testenv.SMTPOptions{})
	d, err := NewSMTP(SMTPConfig{Addr: srv.Addr, From: "billing@example.test", TLS: NoTLS, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct{ name, to, subject string }{
		{"SubjectCRLF", "client-1@example.test", "Invoice\r\nBcc: evil@example.test"},
		{"SubjectLF", "client-1@example.test", "Invoice\nBcc: evil@example.test"},
		{"SubjectCR", "client-1@example.test", "Invoice\rBcc: evil@example.test"},
		{"RecipientCRLF", "client-1@example.test\r\nBcc: evil@example.test", "Invoice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := email("inj.1", c.to)
			m.Subject = c.subject
			if err := d.Deliver(ctx, m, 7); !IsPermanent(err) {
				t.Fatalf("deliver: err %v, want permanent", err)
			}
		})
	}
	if got := srv.Messages(); len(got) != 0 {
		t.Fatalf("server received %d messages, want 0: %+v", len(got), got)
	}
}
