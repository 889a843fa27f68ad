package outbox

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"scheduler"
	"scheduler/internal/testenv/rawhttp"
)

// TestWebhook_HugeStatusLine: a receiver answering 503 or 400 with a reason phrase of tens of
// KiB gets its attempt retried or made dead as the code says, with an error (what the log line,
// the record and a dead notice carry) of a few hundred bytes. A status line longer than the
// reply's headers may be (egress.MaxHeaderBytes) is not read: the attempt fails as one the
// receiver did not answer, and is retried, with as short an error.
func TestWebhook_HugeStatusLine(t *testing.T) {
	for _, c := range []struct {
		code   string
		reason int
		want   scheduler.DeliveryOutcome
		says   string
	}{
		{"503", 32 << 10, scheduler.DeliveryRetry, "reply 503 xxx"},
		{"400", 32 << 10, scheduler.DeliveryDead, "reply 400 xxx"},
		{"400", 4 << 20, scheduler.DeliveryRetry, "exceeded"},
	} {
		t.Run(fmt.Sprintf("%s/%d", c.code, c.reason), func(t *testing.T) {
			u := rawhttp.Serve(t, "HTTP/1.1 "+c.code+" "+strings.Repeat("x", c.reason)+"\r\n")
			dl, err := NewWebhook(WebhookConfig{Hosts: []string{"127.0.0.1"}, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			recs := dispatchOne(t, hook(fmt.Sprintf("k.huge%s.%d", c.code, c.reason), u), dl, time.Minute)
			if len(recs) != 1 || recs[0].Outcome != c.want {
				t.Fatalf("records = %d, first %.200v; want one, %s", len(recs), recs, c.want)
			}
			if n := len(recs[0].Error); n > 2048 || !strings.Contains(recs[0].Error, c.says) {
				t.Fatalf("error of %d bytes: %.200s; want %q, cut short", n, recs[0].Error, c.says)
			}
		})
	}
}
