package testenv

import (
	"bytes"
	"context"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxyDialTimeout bounds the proxy's dial to its target.
const proxyDialTimeout = 5 * time.Second

// staleCodes are what the server sends when the store's fence refuses a
// stale token: JF001, which the fence functions raise, and the SQLSTATE
// field of division_by_zero, with which the gate of a fenced transaction
// refuses (`SELECT 1 / (token = $2)::int`; no job's SQL in the suites
// divides by zero). A proxy in front of Postgres counts them in the
// server's answers (StaleErrors), so that a write refused after its client
// went away is still seen.
var staleCodes = [][]byte{[]byte("JF001"), []byte("C22012\x00")}

// staleTail is how much of a chunk's end is kept for a code split across two reads.
var staleTail = max(len(staleCodes[0]), len(staleCodes[1])) - 1

// Proxy is a TCP proxy on a random loopback port that forwards every
// connection to one target, for simulating partitions between a client and
// a server:
//
//   - Pause holds bytes in both directions on every connection, which stays
//     open; Resume delivers them. This is a partition that heals without
//     breaking the streams (unlike dropping bytes, which corrupts them).
//   - Cut closes every connection and refuses new ones until Resume: the
//     peer is gone.
//   - Delay makes every byte arrive d after it was sent, in both directions
//     (a latency, not a throughput limit: bytes sent together arrive
//     together). DelayEach sets the two directions apart. DelayFrom does the
//     same from the first chunk sent to the target that a test picks, so
//     that a chosen write is in flight.
//
// Bytes the proxy has read are delivered even when their sender closed its
// side meanwhile, the way a slow network delivers what was already sent.
type Proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
	stale  atomic.Int64 // JF001 seen in what the target sent

	mu      sync.Mutex
	closed  bool
	paused  bool
	resumed chan struct{} // closed when a pause ends
	cut     bool
	delay   time.Duration // to the target, and back unless back is set
	back    time.Duration // from the target, when backSet
	backSet bool
	armed   *armedDelay // a DelayFrom waiting for its first chunk
	delayed time.Time   // when the last DelayFrom began
	conns   map[*proxyConn]struct{}
}

// armedDelay is a delay that starts with the first chunk to the target for which first is true.
type armedDelay struct {
	d     time.Duration
	first func([]byte) bool
}

// proxyConn is one proxied connection.
type proxyConn struct {
	client net.Conn
	ctx    context.Context // done once the connection is closed
	cancel context.CancelFunc

	mu     sync.Mutex
	server net.Conn // nil until dialled
	closed bool
}

// MustProxy listens on a random 127.0.0.1 port and forwards every
// connection to target ("host:port"). It is closed in tb.Cleanup, with all
// its goroutines joined.
func MustProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testenv: proxy listen: %v", err)
	}
	p := &Proxy{
		ln:      ln,
		target:  target,
		resumed: make(chan struct{}),
		conns:   make(map[*proxyConn]struct{}),
	}
	p.wg.Go(p.acceptLoop)
	tb.Cleanup(p.close)
	return p
}

// Addr returns the proxy's address, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// StaleErrors returns how many times one of staleCodes appeared in the bytes
// the target sent through the proxy: for Postgres, how many writes the fence refused,
// whether or not their client was still there to read the answer.
func (p *Proxy) StaleErrors() int64 { return p.stale.Load() }

// Pause stops forwarding bytes in both directions on all connections and
// keeps them open; bytes sent meanwhile are held and delivered on Resume.
// New connections are accepted but not forwarded until Resume.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused = true
		p.resumed = make(chan struct{})
	}
}

// Resume ends a Pause, delivering the held bytes, and ends a Cut.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		close(p.resumed)
	}
	p.cut = false
}

// Delay makes every byte read from now on arrive d later, in both
// directions; 0 removes it.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay, p.backSet, p.armed = d, false, nil
}

// DelayEach makes every byte read from now on arrive later: toTarget on
// its way to the target, back on its way from it. A round trip takes the
// sum; what the target sends unasked (a watch event) takes back alone.
func (p *Proxy) DelayEach(toTarget, back time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay, p.back, p.backSet, p.armed = toTarget, back, true, nil
}

// DelayFrom makes the first chunk sent to the target for which first returns
// true, and every byte read after it in both directions, arrive d later.
// Until then bytes pass as before; DelayedSince says when it began. It
// replaces a delay set or armed before.
func (p *Proxy) DelayFrom(d time.Duration, first func(chunk []byte) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.delayed, p.backSet = &armedDelay{d: d, first: first}, time.Time{}, false
}

// DelayedSince returns when the delay armed by DelayFrom began (its first
// chunk was read), zero while it waits.
func (p *Proxy) DelayedSince() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delayed
}

// dueAt returns when a chunk read now in the given direction is due, and
// starts an armed delay whose first chunk it is.
func (p *Proxy) dueAt(b []byte, toTarget bool) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if a := p.armed; a != nil && toTarget && a.first(b) {
		p.delay, p.armed, p.delayed = a.d, nil, now
	}
	if !toTarget && p.backSet {
		return now.Add(p.back)
	}
	return now.Add(p.delay)
}

// Cut closes every open connection and closes new ones right after accepting
// them, until Resume.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	conns := p.snapshot()
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// close stops accepting, closes every connection and joins all goroutines.
func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.snapshot()
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, c := range conns {
		c.close()
	}
	p.wg.Wait()
}

// snapshot returns the open connections; p.mu must be held.
func (p *Proxy) snapshot() []*proxyConn {
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	return conns
}

func (p *Proxy) acceptLoop() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			// The listener is closed by close; a loopback listener fails for
			// no other reason worth retrying.
			return
		}
		c := &proxyConn{client: client}
		c.ctx, c.cancel = context.WithCancel(context.Background())
		p.mu.Lock()
		if p.closed || p.cut {
			p.mu.Unlock()
			_ = client.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.wg.Go(func() { p.serve(c) })
		p.mu.Unlock()
	}
}

// serve dials the target once no pause holds the connection back, then
// forwards both ways until both directions end or the connection is closed.
func (p *Proxy) serve(c *proxyConn) {
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	if !p.waitResumed(c) {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, proxyDialTimeout)
	var d net.Dialer
	server, err := d.DialContext(ctx, "tcp", p.target)
	cancel()
	if err != nil {
		return
	}
	if !c.setServer(server) {
		_ = server.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { p.forward(c, server, c.client, true, nil) })
	wg.Go(func() { p.forward(c, c.client, server, false, &p.stale) })
	wg.Wait()
}

// chunk is bytes read from one side, due on the other side at due.
type chunk struct {
	b   []byte
	due time.Time
}

// forward copies src to dst through a delay line: a reader stamps each chunk
// with its due time, a writer delivers it then (and not while paused), so a
// delay is a latency and not a throughput limit. At the end of src the writer
// delivers what is left and half-closes dst, so the other direction can
// finish; a write error to the server closes the connection, one to the
// client (gone) only drops what was due to it. toTarget says src is the
// client. count, if set, counts staleCodes in the bytes read.
func (p *Proxy) forward(c *proxyConn, dst, src net.Conn, toTarget bool, count *atomic.Int64) {
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
					for _, code := range staleCodes { // a code within the tail was counted before
						count.Add(int64(bytes.Count(seen, code) - bytes.Count(tail, code)))
					}
					tail = bytes.Clone(seen[max(0, len(seen)-staleTail):])
				}
				due := p.dueAt(b, toTarget)
				select {
				case q <- chunk{b: b, due: due}:
				case <-c.ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
	defer wg.Wait()
	gone := false
	for ch := range q {
		if wait := time.Until(ch.due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
				return
			}
		}
		if gone {
			continue // the client is gone: what it still gets is dropped, and the reader goes on
		}
		if !p.waitResumed(c) {
			return
		}
		if _, err := dst.Write(ch.b); err != nil {
			if toTarget {
				c.close() // the server is gone: nothing can be delivered any more
				return
			}
			// The client is gone, but what it sent before it went is still on its way to the
			// server, as on a network: only this direction stops.
			gone = true
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// waitResumed waits while the proxy is paused. It reports false when the
// connection was closed, meanwhile or before.
func (p *Proxy) waitResumed(c *proxyConn) bool {
	for {
		p.mu.Lock()
		paused, resumed := p.paused, p.resumed
		p.mu.Unlock()
		if !paused {
			return c.ctx.Err() == nil
		}
		select {
		case <-resumed:
		case <-c.ctx.Done():
			return false
		}
	}
}

// setServer records the dialled server side. It reports false if the
// connection was closed meanwhile.
func (c *proxyConn) setServer(server net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.server = server
	return true
}

// close closes both sides of the connection; safe to call more than once.
func (c *proxyConn) close() {
	c.mu.Lock()
	c.closed = true
	server := c.server
	c.mu.Unlock()
	c.cancel()
	_ = c.client.Close()
	if server != nil {
		_ = server.Close()
	}
}

// ProxiedDSN returns a Proxy to the server of the URL dsn and dsn with its host replaced by the
// proxy's address, so that every connection made with it can be paused, delayed or cut.
func ProxiedDSN(tb testing.TB, dsn string) (string, *Proxy) {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatalf("testenv: proxy to %s: %v", dsn, err)
	}
	p := MustProxy(tb, u.Host)
	u.Host = p.Addr()
	return u.String(), p
}
