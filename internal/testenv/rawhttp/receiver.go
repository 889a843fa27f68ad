package rawhttp

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"scheduler/internal/testenv"
)

// Receiver is a hostile receiver on keep-alive connections, answering each request by its path:
//   - /ok answers 200 after a short wait, so that calls made at once open connections of their
//     own, which the client may keep;
//   - /reset reads the request and resets the connection without a reply;
//   - /headers answers 200 with about 200 KiB of small headers;
//   - /far redirects (307) to /reset with a query of 100 KiB;
//   - any other path answers 404.
//
// It counts the requests each path got with each Idempotency-Key, so that a request sent twice
// is seen.
type Receiver struct {
	// URL is "http://127.0.0.1:port".
	URL  string
	mu   sync.Mutex
	seen map[string]int
}

// StartReceiver serves a Receiver on a new loopback port until tb's cleanup.
func StartReceiver(tb testing.TB) *Receiver {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("rawhttp: listen: %v", err)
	}
	r := &Receiver{seen: map[string]int{}}
	r.URL = "http://" + testenv.Serve(tb, ln, r.serve)
	return r
}

// Count returns how many requests path got with the Idempotency-Key key.
func (r *Receiver) Count(path, key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[path+" "+key]
}

func (r *Receiver) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		r.mu.Lock()
		r.seen[req.URL.Path+" "+req.Header.Get("Idempotency-Key")]++
		r.mu.Unlock()
		switch req.URL.Path {
		case "/ok":
			time.Sleep(50 * time.Millisecond)
			_, _ = fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		case "/reset":
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			return
		case "/headers":
			var b strings.Builder
			b.WriteString("HTTP/1.1 200 OK\r\n")
			for i := range 20000 {
				fmt.Fprintf(&b, "X-H%d: v\r\n", i)
			}
			b.WriteString("Content-Length: 0\r\n\r\n")
			_, _ = c.Write([]byte(b.String()))
		case "/far":
			_, _ = fmt.Fprintf(c, "HTTP/1.1 307 Temporary Redirect\r\nLocation: /reset?pad=%s\r\nContent-Length: 0\r\n\r\n", strings.Repeat("p", 100<<10))
		default:
			_, _ = fmt.Fprint(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
		}
	}
}
