// Package egress is the HTTP transport of the requests the scheduler sends on a job's behalf:
// http jobs' calls and the outbox's webhooks. Such a request has effects the store cannot fence,
// so it goes out once per attempt, and the reply a receiver chooses cannot take the daemon's
// memory.
//
// net/http's own transport sends a request again on another pooled connection when a reused
// one breaks after the request was written, if the request looks idempotent, and every request
// here carries an Idempotency-Key header, which is what it looks for: a receiver that reads the
// request and then resets the connection got it once per idle connection in the pool. The
// transport here opens a connection per request, so that nothing is sent again except by the
// scheduler's own retries, which count as attempts; for the same reason it speaks HTTP/1.1
// only (Transport). It also bounds a reply's headers far below
// net/http's 10 MB, which a receiver could fill with a million small headers at once.
package egress

import (
	"crypto/tls"
	"net/http"
)

// MaxHeaderBytes bounds the headers of a reply.
const MaxHeaderBytes = 64 << 10

// Transport returns a transport that sends each request on a connection of its own, over
// HTTP/1.1, and reads at most MaxHeaderBytes of a reply's headers; proxies, timeouts and TLS are
// net/http's defaults (TLS certificates verified). Not HTTP/2: its client sends a request again,
// without end, when the server refuses the stream (REFUSED_STREAM, or a GOAWAY before it), which
// a receiver may do after it read and acted on the request; only the scheduler's own retries may
// send a request again.
func Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableKeepAlives = true
	t.MaxResponseHeaderBytes = MaxHeaderBytes
	t.ForceAttemptHTTP2 = false
	t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // non-nil and empty: no HTTP/2
	return t
}
