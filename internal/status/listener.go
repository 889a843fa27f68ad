package status

import (
	"net"
	"sync"

	"golang.org/x/net/netutil"
)

// Bounds of the connections the server holds at once, each a file descriptor of the daemon's,
// which its store, its coordinator and its jobs' pipes need too: a client that opens
// connections and holds them (idle, or sending nothing) must not take them all.
const (
	// maxConns bounds all connections; past it, new ones wait in the kernel's queue.
	maxConns = 1024
	// maxConnsPerClient bounds one address's; a connection past it is closed at once.
	maxConnsPerClient = 256
)

// boundListener wraps ln with the bounds above.
func boundListener(ln net.Listener) net.Listener {
	return netutil.LimitListener(&perClientListener{Listener: ln, open: map[string]int{}}, maxConns)
}

// perClientListener closes, as soon as it is accepted, a connection from an address that
// already holds maxConnsPerClient.
type perClientListener struct {
	net.Listener
	mu   sync.Mutex
	open map[string]int
}

// Accept returns the next connection whose address is within its bound.
func (l *perClientListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := connHost(c)
		l.mu.Lock()
		if l.open[host] >= maxConnsPerClient {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.open[host]++
		l.mu.Unlock()
		return &clientConn{Conn: c, release: func() { l.release(host) }}, nil
	}
}

func (l *perClientListener) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[host]--; l.open[host] <= 0 {
		delete(l.open, host)
	}
}

// clientConn uncounts its address when closed, once.
type clientConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *clientConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// connHost is the address a connection comes from, without its port.
func connHost(c net.Conn) string {
	addr := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
