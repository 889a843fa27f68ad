package testenv

import (
	"net"
	"sync"
	"testing"
)

// Serve accepts connections on ln and runs handle on each, in a goroutine of
// its own, until the test ends; it returns ln's address. The cleanup closes
// ln and every accepted connection, then waits for the accept loop and every
// handle to return, so a stand-in server leaves no goroutine behind. handle
// must return once its connection is closed; it need not close it.
func Serve(tb testing.TB, ln net.Listener, handle func(net.Conn)) string {
	tb.Helper()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		closed bool
		conns  []net.Conn
	)
	// track records c for the cleanup, or reports false once the cleanup
	// has run, so that a connection accepted meanwhile is not left open.
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return false
		}
		conns = append(conns, c)
		return true
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				// Closed by the cleanup; a loopback listener fails for no
				// other reason worth retrying.
				return
			}
			if !track(c) {
				_ = c.Close()
				return
			}
			wg.Go(func() {
				defer c.Close()
				handle(c)
			})
		}
	})
	tb.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}
