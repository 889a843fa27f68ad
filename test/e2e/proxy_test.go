package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// staleCode is the SQLSTATE the fence raises for a stale token. A Postgres proxy counts it in
// the server's answers, so that a write refused after its client went away is still seen.
var staleCode = []byte("JF001")

// proxy is a TCP proxy on a loopback port between one replica and one server (an etcd member
// or Postgres), for partitions:
//
//   - pause holds the bytes of every connection in both directions, keeping the connections
//     open; resume delivers them in order, as a healed partition would.
//   - setDelay makes every byte arrive d after it was sent (a latency, not a throughput limit:
//     bytes sent together arrive together).
//   - cut closes every connection and refuses new ones until resume: the server is gone.
//
// Bytes the proxy has read are delivered even when their sender closed its side meanwhile,
// the way a slow network delivers what was already sent.
type proxy struct {
	name   string
	target string
	ln     net.Listener
	wg     sync.WaitGroup
	stale  atomic.Int64 // JF001 errors seen from the server

	mu      sync.Mutex
	closed  bool
	cut     bool
	paused  bool
	resumed chan struct{} // closed when a pause ends
	delay   time.Duration
	links   map[*link]struct{}
}

// link is one proxied connection.
type link struct {
	client net.Conn
	server net.Conn // nil until dialled
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
}

// chunk is bytes read from one side, due on the other side at due.
type chunk struct {
	b   []byte
	due time.Time
}

// newProxy listens on a free loopback port and forwards every connection to target. It is
// closed, with its goroutines joined, in t.Cleanup.
func newProxy(t *testing.T, name, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy %s: listen: %v", name, err)
	}
	p := &proxy{name: name, target: target, ln: ln, resumed: make(chan struct{}), links: map[*link]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// addr is the proxy's address, "127.0.0.1:port".
func (p *proxy) addr() string { return p.ln.Addr().String() }

// staleErrors is how many JF001 errors the server sent through this proxy.
func (p *proxy) staleErrors() int64 { return p.stale.Load() }

func (p *proxy) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused = true
		p.resumed = make(chan struct{})
	}
}

// resume ends a pause (delivering what it held) and a cut.
func (p *proxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		close(p.resumed)
	}
	p.cut = false
}

func (p *proxy) setDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

func (p *proxy) cutAll() {
	p.mu.Lock()
	p.cut = true
	links := p.snapshot()
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	if p.paused {
		p.paused = false
		close(p.resumed)
	}
	links := p.snapshot()
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, l := range links {
		l.close()
	}
	p.wg.Wait()
}

// snapshot returns the open links; p.mu must be held.
func (p *proxy) snapshot() []*link {
	out := make([]*link, 0, len(p.links))
	for l := range p.links {
		out = append(out, l)
	}
	return out
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		l := &link{client: c}
		l.ctx, l.cancel = context.WithCancel(context.Background())
		p.mu.Lock()
		if p.closed || p.cut {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.links[l] = struct{}{}
		p.wg.Go(func() { p.serve(l) })
		p.mu.Unlock()
	}
}

// serve dials the target once no pause holds the link back, then forwards both ways.
func (p *proxy) serve(l *link) {
	defer func() {
		l.close()
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	if !p.waitResumed(l) {
		return
	}
	ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
	var d net.Dialer
	server, err := d.DialContext(ctx, "tcp", p.target)
	cancel()
	if err != nil {
		return
	}
	if !l.setServer(server) {
		_ = server.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { p.forward(l, server, l.client, nil) })
	wg.Go(func() { p.forward(l, l.client, server, &p.stale) })
	wg.Wait()
}

// forward copies src to dst through a delay line: a reader stamps each chunk with its due
// time, a writer delivers it then (and not while paused). At the end of src the writer
// delivers what is left and half-closes dst; a write error closes the link. count, if set,
// counts JF001 in the bytes read.
func (p *proxy) forward(l *link, dst, src net.Conn, count *atomic.Int64) {
	q := make(chan chunk, 1024)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(q)
		var tail []byte // the end of the previous chunk, for a code split across two reads
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				b := bytes.Clone(buf[:n])
				if count != nil {
					seen := append(tail, b...)
					count.Add(int64(bytes.Count(seen, staleCode)))
					tail = bytes.Clone(seen[max(0, len(seen)-len(staleCode)+1):])
				}
				p.mu.Lock()
				due := time.Now().Add(p.delay)
				p.mu.Unlock()
				select {
				case q <- chunk{b: b, due: due}:
				case <-l.ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
	defer wg.Wait()
	for c := range q {
		if wait := time.Until(c.due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-l.ctx.Done():
				t.Stop()
				return
			}
		}
		if !p.waitResumed(l) {
			return
		}
		if _, err := dst.Write(c.b); err != nil {
			l.close()
			return
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// waitResumed waits while the proxy is paused; false if the link was closed meanwhile.
func (p *proxy) waitResumed(l *link) bool {
	for {
		p.mu.Lock()
		paused, resumed := p.paused, p.resumed
		p.mu.Unlock()
		if !paused {
			return l.ctx.Err() == nil
		}
		select {
		case <-resumed:
		case <-l.ctx.Done():
			return false
		}
	}
}

func (l *link) setServer(s net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.server = s
	return true
}

func (l *link) close() {
	l.mu.Lock()
	l.closed = true
	s := l.server
	l.mu.Unlock()
	l.cancel()
	_ = l.client.Close()
	if s != nil {
		_ = s.Close()
	}
}

// TestProxy checks the proxy's faults on an echo server: a pause holds bytes and delivers them
// on resume, a delay is a latency, a cut refuses connections until resume, and JF001 is counted
// in what the server sends.
func TestProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var echoes sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); echoes.Wait() })
	echoes.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			echoes.Go(func() { defer c.Close(); _, _ = io.Copy(c, c) })
		}
	})
	p := newProxy(t, "echo", ln.Addr().String())
	conn, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	roundTrip := func(msg string, within time.Duration) (time.Duration, error) {
		start := time.Now()
		if err := conn.SetDeadline(start.Add(within)); err != nil {
			return 0, err
		}
		if _, err := conn.Write([]byte(msg)); err != nil {
			return 0, err
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(conn, buf); err != nil {
			return 0, err
		}
		if string(buf) != msg {
			return 0, errors.New("echo " + string(buf) + ", want " + msg)
		}
		return time.Since(start), nil
	}
	if _, err := roundTrip("hello JF001", 5*time.Second); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	if got := p.staleErrors(); got != 1 {
		t.Fatalf("stale errors = %d, want 1", got)
	}

	p.pause()
	if _, err := roundTrip("held", 200*time.Millisecond); err == nil {
		t.Fatal("round trip through a paused proxy succeeded")
	}
	p.resume()
	buf := make([]byte, 4)
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "held" {
		t.Fatalf("after resume read %q, %v; want the held bytes", buf, err)
	}

	p.setDelay(100 * time.Millisecond)
	took, err := roundTrip("slow", 5*time.Second)
	if err != nil || took < 200*time.Millisecond {
		t.Fatalf("delayed round trip took %v (%v), want at least two delays", took, err)
	}
	p.setDelay(0)

	p.cutAll()
	if _, err := roundTrip("cut", time.Second); err == nil {
		t.Fatal("round trip through a cut proxy succeeded")
	}
	p.resume()
	conn2, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	conn = conn2
	if _, err := roundTrip("again", 5*time.Second); err != nil {
		t.Fatalf("round trip after the cut healed: %v", err)
	}
}
