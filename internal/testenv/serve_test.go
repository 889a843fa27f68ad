package testenv

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

func TestServe(t *testing.T) {
	t.Parallel()
	var (
		c        net.Conn
		addr     string
		returned atomic.Int32
	)
	t.Run("Inner", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		addr = Serve(t, ln, func(c net.Conn) {
			defer returned.Add(1)
			_, _ = io.Copy(c, c)
		})
		if addr != ln.Addr().String() {
			t.Fatalf("Serve = %s, want the listener's address %s", addr, ln.Addr())
		}
		c, err = net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		roundTrip(t, c, "served")
	})
	defer c.Close()

	// The cleanup closed the connection it served and waited for its
	// handler, and no longer accepts.
	if got := returned.Load(); got != 1 {
		t.Fatalf("handlers returned by the end of the test = %d, want 1", got)
	}
	expectClosed(t, c)
	if c2, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		_ = c2.Close()
		t.Fatalf("dial %s after the test ended succeeded, want refused", addr)
	}
}
