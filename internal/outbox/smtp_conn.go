package outbox

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
)

// boundConn dials the SMTP connection of one delivery and closes it when the
// delivery's ctx ends. The mail library uses ctx for the dial only, and then
// bounds each command by its own timeout, which every command renews: a
// server that never answers, or answers one slow line at a time, would hold
// the delivery past its SendTimeout and the term's end.
type boundConn struct {
	ctx      context.Context
	tls      *tls.Config
	implicit bool // TLS from the first byte

	mu   sync.Mutex
	stop []func() bool
}

// dial connects to addr (with a TLS handshake when implicit), and arranges
// for the connection to close when the delivery's ctx ends.
func (b *boundConn) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if b.implicit {
		tc := tls.Client(c, b.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = c.Close()
			return nil, err
		}
		// The *tls.Conn itself goes to the library, which trusts a PLAIN
		// login to it because it sees that type.
		c = tc
	}
	b.mu.Lock()
	b.stop = append(b.stop, context.AfterFunc(b.ctx, func() { _ = c.Close() }))
	b.mu.Unlock()
	return c, nil
}

// release stops watching ctx once the delivery is over.
func (b *boundConn) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, stop := range b.stop {
		stop()
	}
	b.stop = nil
}
