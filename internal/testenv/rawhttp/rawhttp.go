// Package rawhttp is an HTTP server for tests that answers with bytes written by hand: a status
// line or headers that no well-behaved server would send (a reason phrase of megabytes, say),
// for testing what a client makes of them.
package rawhttp

import (
	"bufio"
	"io"
	"net"
	"testing"

	"scheduler/internal/testenv"
)

// Serve answers every request on a new loopback port with head (a status line and any
// headers, each ending in CRLF), an empty body, and closes the connection; it returns the
// server's URL, "http://127.0.0.1:port/". The server stops in tb.Cleanup.
func Serve(tb testing.TB, head string) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("rawhttp: listen: %v", err)
	}
	return "http://" + testenv.Serve(tb, ln, func(c net.Conn) {
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
		_, _ = io.WriteString(c, head+"Content-Length: 0\r\nConnection: close\r\n\r\n")
	}) + "/"
}
