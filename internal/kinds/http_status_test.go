package kinds

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"scheduler/internal/testenv"
)

// hugeReason serves every request with a status line of code and a reason phrase of n bytes,
// as net/http reads it up to its header limit; it returns the server's URL.
func hugeReason(t *testing.T, code string, n int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := testenv.Serve(t, ln, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\r\n" {
				break
			}
		}
		_, _ = io.WriteString(c, "HTTP/1.1 "+code+" "+strings.Repeat("é", n/2)+"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	})
	return "http://" + addr + "/"
}

// TestHTTPJob_HugeStatusLine: a receiver's reason phrase of megabytes reaches neither the
// run's output nor its error (and so no log line or notification) beyond a short excerpt, cut
// at a character.
func TestHTTPJob_HugeStatusLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), jobTypesTimeout)
	defer cancel()
	for _, code := range []string{"500", "302"} {
		t.Run(code, func(t *testing.T) {
			u := hugeReason(t, code, 4<<20)
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
