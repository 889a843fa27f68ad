package outbox

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
)

// maxSessionRead bounds what one SMTP session reads from the server. Its replies are a few
// short lines, but the mail library gathers the lines of a reply (a greeting, the answer to
// EHLO) in memory without a limit: a server that never stops sending would fill the daemon's
// memory before the send timeout ends the session.
const maxSessionRead = 1 << 20

// errFlooded is the read error of a session past maxSessionRead.
var errFlooded = errors.New("smtp: the server sent more than a session may read")

// boundConn dials the SMTP connection of one delivery and closes it when the
// delivery's ctx ends, or at the latest when the delivery is over. The mail
// library uses ctx for the dial only, and then bounds each command by its own
// timeout, which every command renews: a server that never answers, or
// answers one slow line at a time, would hold the delivery past its
// SendTimeout and the term's end. It also reads at most maxSessionRead bytes
// from the server.
type boundConn struct {
	ctx      context.Context
	tls      *tls.Config
	implicit bool // TLS from the first byte

	mu    sync.Mutex
	stop  []func() bool
	conns []*cappedConn
}

// dial connects to addr (with a TLS handshake when implicit), and arranges
// for the connection to close when the delivery's ctx ends.
func (b *boundConn) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	raw, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cc := &cappedConn{Conn: raw, left: maxSessionRead}
	var c net.Conn = cc
	if b.implicit {
		tc := tls.Client(cc, b.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, err
		}
		// The *tls.Conn itself goes to the library, which trusts a PLAIN
		// login to it because it sees that type.
		c = tc
	}
	b.mu.Lock()
	b.conns = append(b.conns, cc)
	b.stop = append(b.stop, context.AfterFunc(b.ctx, func() { _ = raw.Close() }))
	b.mu.Unlock()
	return c, nil
}

// flooded reports whether a connection of the delivery stopped reading
// because the server sent more than maxSessionRead.
func (b *boundConn) flooded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		if c.flooded() {
			return true
		}
	}
	return false
}

// release stops watching ctx once the delivery is over, and closes the
// connections: the library leaves one open when its QUIT fails.
func (b *boundConn) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, stop := range b.stop {
		stop()
	}
	for _, c := range b.conns {
		_ = c.Close()
	}
	b.stop, b.conns = nil, nil
}

// cappedConn is a connection that reads at most left more bytes, and then
// fails every read with errFlooded.
type cappedConn struct {
	net.Conn

	mu   sync.Mutex
	left int64
}

func (c *cappedConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	left := c.left
	c.mu.Unlock()
	if left <= 0 {
		return 0, errFlooded
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.left -= int64(n)
	c.mu.Unlock()
	return n, err
}

// flooded reports whether the connection read all it may.
func (c *cappedConn) flooded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.left <= 0
}
