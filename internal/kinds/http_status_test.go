package kinds

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"scheduler/internal/testenv/rawhttp"
)

// hugeReason serves every request with a status line of code and a reason phrase of n bytes,
// as net/http reads it up to its header limit; it returns the server's URL.
func hugeReason(t *testing.T, code string, n int) string {
	return rawhttp.Serve(t, "HTTP/1.1 "+code+" "+strings.Repeat("é", n/2)+"\r\n")
}

// TestHTTPJob_HugeStatusLine: a receiver's reason phrase of tens of KiB reaches neither the
// run's output nor its error (and so no log line or notification) beyond a short excerpt, cut
// at a character. (One longer than the reply's headers may be is not read at all: see
// TestHTTPJob_ReplyBounded.)
func TestHTTPJob_HugeStatusLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	for _, code := range []string{"500", "302"} {
		t.Run(code, func(t *testing.T) {
			u := hugeReason(t, code, 32<<10)
			out, err := mustHTTP(t, &http.Client{}, HTTPConfig{URL: u}).Execute(ctx, testRun())
			if err == nil {
				t.Fatalf("Execute succeeded on %s", code)
			}
			if len(out) > 1024 || len(err.Error()) > 1024 {
				t.Fatalf("output of %d bytes, error of %d bytes: want the status line cut short", len(out), len(err.Error()))
			}
			if !strings.HasPrefix(out, code+" éé") || !strings.Contains(out, "é…") {
				t.Fatalf("output = %q, want the status cut at a character, marked", out)
			}
		})
	}
}

// TestHTTPJob_HugeRedirect: a redirect whose reason phrase and Location are tens of KiB long,
// followed or not, fails the run with an error that names its target cut short.
func TestHTTPJob_HugeRedirect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	far := "http://elsewhere.example.test/" + strings.Repeat("p", 32<<10)
	for _, follow := range []bool{false, true} {
		t.Run(map[bool]string{false: "NotFollowed", true: "Followed"}[follow], func(t *testing.T) {
			u := rawhttp.Serve(t, "HTTP/1.1 307 "+strings.Repeat("r", 16<<10)+"\r\nLocation: "+far+"\r\n")
			out, err := mustHTTP(t, &http.Client{}, HTTPConfig{URL: u, FollowRedirects: follow}).Execute(ctx, testRun())
			if err == nil {
				t.Fatal("Execute succeeded on a redirect elsewhere")
			}
			if len(out) > 1024 || len(err.Error()) > 2048 || !strings.Contains(err.Error(), "elsewhere.example.test/ppp") {
				t.Fatalf("output of %d bytes, error of %d bytes (%.200s): want the target named, cut short", len(out), len(err.Error()), err)
			}
		})
	}
}
