package egress

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// tlsPair returns a certificate for a test server and a transport of Transport's that trusts it.
func tlsPair(t *testing.T) (tls.Certificate, *http.Transport) {
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	cert, pool := ts.TLS.Certificates[0], x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	ts.Close()
	tr := Transport()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	return cert, tr
}

// TestTransport_HTTP1Only: a receiver that offers HTTP/2 is spoken to in HTTP/1.1.
func TestTransport_HTTP1Only(t *testing.T) {
	var proto atomic.Value
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { proto.Store(r.Proto) }))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	tr := Transport()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	resp, err := (&http.Client{Transport: tr}).Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := proto.Load(); got != "HTTP/1.1" || resp.ProtoMajor != 1 {
		t.Fatalf("spoke %v (reply %s), want HTTP/1.1", got, resp.Proto)
	}
}

// TestTransport_RefusedStreamNotResent: a receiver that speaks HTTP/2 only, reads each request
// whole (acting on it) and then refuses the stream (REFUSED_STREAM, or a GOAWAY before it) gets
// a request once at the most. Before, net/http's HTTP/2 client took the refusal for "never
// processed" and sent the request again on a new connection without end: 815 copies of one
// http job's call in 5 s, 5,496 of one webhook in 30 s.
func TestTransport_RefusedStreamNotResent(t *testing.T) {
	for name, goAway := range map[string]bool{"refused stream": false, "goaway": true} {
		t.Run(name, func(t *testing.T) {
			cert, tr := tlsPair(t)
			ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var requests atomic.Int32
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					go refuseStreams(c, goAway, &requests)
				}
			}()
			client := &http.Client{Transport: tr, Timeout: 3 * time.Second}
			resp, err := client.Post("https://"+ln.Addr().String()+"/hook", "text/plain", strings.NewReader("once"))
			if err == nil {
				_ = resp.Body.Close()
			}
			if n := requests.Load(); n > 1 {
				t.Fatalf("the receiver read the request %d times for one call, want once at the most", n)
			}
		})
	}
}

// refuseStreams serves HTTP/2 on c: each request read whole is counted, then refused.
func refuseStreams(c net.Conn, goAway bool, requests *atomic.Int32) {
	defer c.Close()
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
		return // not HTTP/2
	}
	fr := http2.NewFramer(c, c)
	_ = fr.WriteSettings()
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame, *http2.DataFrame:
			if !f.Header().Flags.Has(http2.FlagDataEndStream) {
				continue
			}
			requests.Add(1)
			if goAway {
				_ = fr.WriteGoAway(0, http2.ErrCodeNo, nil)
			} else {
				_ = fr.WriteRSTStream(f.Header().StreamID, http2.ErrCodeRefusedStream)
			}
		}
	}
}
