package outbox

import (
	"strings"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv/rawhttp"
)

// TestWebhook_HugeStatusLine: a receiver answering 503 or 400 with a reason phrase of
// megabytes gets its attempt retried or made dead as the code says, with an error (what the
// log line, the record and a dead notice carry) of a few hundred bytes.
func TestWebhook_HugeStatusLine(t *testing.T) {
	for _, c := range []struct {
		code string
		want scheduler.DeliveryOutcome
	}{
		{"503", scheduler.DeliveryRetry},
		{"400", scheduler.DeliveryDead},
	} {
		t.Run(c.code, func(t *testing.T) {
			u := rawhttp.Serve(t, "HTTP/1.1 "+c.code+" "+strings.Repeat("x", 4<<20)+"\r\n")
			dl, err := NewWebhook(WebhookConfig{Hosts: []string{"127.0.0.1"}, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			recs := dispatchOne(t, hook("k.huge"+c.code, u), dl, time.Minute)
			if len(recs) != 1 || recs[0].Outcome != c.want {
				t.Fatalf("records = %d, first %.200v; want one, %s", len(recs), recs, c.want)
			}
			if n := len(recs[0].Error); n > 2048 || !strings.Contains(recs[0].Error, "reply "+c.code+" xxx") {
				t.Fatalf("error of %d bytes: %.200s; want the reply's start, cut short", n, recs[0].Error)
			}
		})
	}
}
