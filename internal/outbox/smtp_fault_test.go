package outbox

import (
	"strings"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv"
	"scheduler/internal/testenv/smtpfault"
)

// TestSMTP_SessionBreaksAfterAcceptance: a server that answered 250 to the end of DATA and
// then drops or refuses the RSET or QUIT that close the session has the message: the attempt
// is recorded delivered, once, and not sent again; the connection is closed, even when the
// server keeps it open after refusing QUIT.
func TestSMTP_SessionBreaksAfterAcceptance(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault smtpfault.Fault
	}{
		{"DropAtRset", smtpfault.DropAtRset},
		{"RefuseRset", smtpfault.RefuseRset},
		{"DropAtQuit", smtpfault.DropAtQuit},
		{"RefuseQuit", smtpfault.RefuseQuit},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := smtpfault.Start(t, smtpfault.Options{Fault: c.fault})
			dl, err := NewSMTP(SMTPConfig{Addr: srv.Addr, From: "billing@example.test", TLS: NoTLS, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			recs := dispatchOne(t, email("k.accepted", "client-1@example.test"), dl, time.Minute)
			if len(recs) != 1 || recs[0].Outcome != scheduler.DeliveryOK {
				t.Fatalf("records = %+v, want one, delivered", recs)
			}
			if got := srv.Accepted(); len(got) != 1 || got[0] != "<k.accepted@example.test>" {
				t.Fatalf("server accepted %q, want the message once", got)
			}
			if c.fault == smtpfault.RefuseQuit {
				testenv.Eventually(t, 30*time.Second, 10*time.Millisecond, "the connection closed by the client", func() bool {
					return srv.ClientClosed() == 1
				})
			}
		})
	}
}

// TestSMTP_DropBeforeTheReplyToData: a server that drops the connection after the message's
// final "." and before its reply leaves the sender not knowing: the attempt is retried (the
// repeat carries the same Message-ID for the receiver to drop).
func TestSMTP_DropBeforeTheReplyToData(t *testing.T) {
	srv := smtpfault.Start(t, smtpfault.Options{Fault: smtpfault.DropAfterData})
	dl, err := NewSMTP(SMTPConfig{Addr: srv.Addr, From: "billing@example.test", TLS: NoTLS, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wantOneRetry(t, dispatchOne(t, email("k.dropped", "client-1@example.test"), dl, time.Minute), "EOF")
}

// TestSMTP_ServerFloods: a server that sends a reply without end (a multi-line greeting, one
// greeting line, the answer to EHLO) is read no further than a session's bound: the attempt
// ends long before the send timeout, retried with an error that says what the server did, and
// the daemon's memory is not spent on the reply.
func TestSMTP_ServerFloods(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault smtpfault.Fault
	}{
		{"Greeting", smtpfault.FloodGreeting},
		{"OneLine", smtpfault.FloodLine},
		{"EHLO", smtpfault.FloodEHLO},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := smtpfault.Start(t, smtpfault.Options{Fault: c.fault, Flood: 16 << 20})
			// The server sends its flood and then waits: without the bound the session reads it
			// all and ends only at the send timeout, with a deadline error.
			dl, err := NewSMTP(SMTPConfig{Addr: srv.Addr, From: "billing@example.test", TLS: NoTLS, Timeout: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			recs := dispatchOne(t, email("k.flood", "client-1@example.test"), dl, 10*time.Second)
			wantOneRetry(t, recs, "sent more than 1048576 bytes in one session")
			if strings.Contains(recs[0].Error, "deadline") {
				t.Fatalf("error %q: the session ran to its timeout", recs[0].Error)
			}
		})
	}
}

// TestSMTP_LongRefusal: a refusal whose text is most of a session's bound still makes the
// message dead at once, with an error (what the log line and the record carry) cut short.
func TestSMTP_LongRefusal(t *testing.T) {
	srv := smtpfault.Start(t, smtpfault.Options{Fault: smtpfault.LongRefusal, Flood: 900 << 10})
	dl, err := NewSMTP(SMTPConfig{Addr: srv.Addr, From: "billing@example.test", TLS: NoTLS, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	recs := dispatchOne(t, email("k.refused", "client-1@example.test"), dl, time.Minute)
	if len(recs) != 1 || recs[0].Outcome != scheduler.DeliveryDead {
		t.Fatalf("%d records, first %.300v; want one, dead", len(recs), recs)
	}
	if n := len(recs[0].Error); n > 2048 || !strings.Contains(recs[0].Error, "550") {
		t.Fatalf("error of %d bytes: %.300s; want the refusal, cut short", n, recs[0].Error)
	}
}
