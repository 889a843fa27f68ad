package testenv

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoServer accepts connections on loopback and echoes every byte back
// until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	return Serve(t, ln, func(c net.Conn) { _, _ = io.Copy(c, c) })
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// dialProxy starts a proxy to target and returns it with a connection
// through it.
func dialProxy(t *testing.T, target string) (*Proxy, net.Conn) {
	t.Helper()
	p := MustProxy(t, target)
	return p, dial(t, p.Addr())
}

// roundTrip writes msg and reads len(msg) bytes back within 10 s.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
	expectEcho(t, c, msg)
}

func expectEcho(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read echo of %q: %v", msg, err)
	}
	if string(buf) != msg {
		t.Fatalf("echo = %q, want %q", buf, msg)
	}
}

// readWithin reads one byte from c, waiting at most d for it.
func readWithin(c net.Conn, d time.Duration) (int, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	return c.Read(make([]byte, 1))
}

// expectNothing asserts that no byte arrives on c for a while.
func expectNothing(t *testing.T, c net.Conn) {
	t.Helper()
	if n, err := readWithin(c, 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read while held = %d bytes, %v; want deadline exceeded", n, err)
	}
}

// expectClosed asserts that c is closed by the other side.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	if n, err := readWithin(c, 10*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read = %d bytes, %v; want closed connection", n, err)
	}
}

func TestProxy(t *testing.T) {
	t.Parallel()
	target := echoServer(t)

	t.Run("Forwards", func(t *testing.T) {
		_, c := dialProxy(t, target)
		roundTrip(t, c, "hello")
		roundTrip(t, c, "again")
	})

	t.Run("PauseHoldsAndResumeDelivers", func(t *testing.T) {
		p, c := dialProxy(t, target)
		roundTrip(t, c, "before")

		p.Pause()
		if _, err := c.Write([]byte("held")); err != nil {
			t.Fatalf("write while paused: %v", err)
		}
		expectNothing(t, c)
		fresh := dial(t, p.Addr()) // accepted, not forwarded
		if _, err := fresh.Write([]byte("new")); err != nil {
			t.Fatalf("write on new connection while paused: %v", err)
		}
		expectNothing(t, fresh)

		p.Resume()
		expectEcho(t, c, "held")
		expectEcho(t, fresh, "new")
		roundTrip(t, c, "after")
	})

	t.Run("CutClosesAndRefuses", func(t *testing.T) {
		p, c := dialProxy(t, target)
		roundTrip(t, c, "before")

		p.Cut()
		expectClosed(t, c)
		expectClosed(t, dial(t, p.Addr()))

		p.Resume()
		roundTrip(t, dial(t, p.Addr()), "after")
	})

	t.Run("DelayAddsLatency", func(t *testing.T) {
		slow, fast := MustProxy(t, target), MustProxy(t, target)
		const d = 300 * time.Millisecond
		slow.Delay(d)
		cs, cf := dial(t, slow.Addr()), dial(t, fast.Addr())

		// Send through both at once; the undelayed echo must come first.
		type arrival struct {
			name string
			at   time.Time
		}
		arrivals := make(chan arrival, 2)
		start := time.Now()
		var wg sync.WaitGroup
		for name, c := range map[string]net.Conn{"slow": cs, "fast": cf} {
			wg.Go(func() {
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := c.Write([]byte("x")); err != nil {
					t.Errorf("%s write: %v", name, err)
				}
				if _, err := bufio.NewReader(c).ReadByte(); err != nil {
					t.Errorf("%s read: %v", name, err)
				}
				arrivals <- arrival{name, time.Now()}
			})
		}
		wg.Wait()
		close(arrivals)
		first, second := <-arrivals, <-arrivals
		if first.name != "fast" {
			t.Fatalf("first echo through %s proxy, want fast", first.name)
		}
		// Both directions are delayed: a lower bound, not a timing guess.
		if got := second.at.Sub(start); got < 2*d {
			t.Fatalf("delayed round trip took %v, want >= %v", got, 2*d)
		}

		slow.Delay(0)
		roundTrip(t, cs, "undelayed")
	})

	t.Run("DelayIsALatency", func(t *testing.T) {
		p := MustProxy(t, target)
		const d = 200 * time.Millisecond
		p.Delay(d)
		c := dial(t, p.Addr())

		// Bytes sent together arrive together, 2d later (both directions),
		// however many reads the proxy needs for them.
		msg := strings.Repeat("x", 256<<10)
		start := time.Now()
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() {
			if _, err := c.Write([]byte(msg)); err != nil {
				t.Errorf("write: %v", err)
			}
		})
		expectEcho(t, c, msg)
		if got, limit := time.Since(start), 4*d; got < 2*d || got >= limit {
			t.Fatalf("%d delayed bytes took %v, want >= %v and < %v", len(msg), got, 2*d, limit)
		}
	})

	t.Run("DelayEachSetsTheDirectionsApart", func(t *testing.T) {
		// The server notes the first message of each connection, in order, and echoes all.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		reached := make(chan string, 2)
		addr := Serve(t, ln, func(c net.Conn) {
			b := make([]byte, 16)
			n, err := c.Read(b)
			if err != nil {
				return
			}
			reached <- string(b[:n])
			_, _ = c.Write(b[:n])
			_, _ = io.Copy(c, c)
		})
		const d = 300 * time.Millisecond
		out, back := MustProxy(t, addr), MustProxy(t, addr)
		out.DelayEach(d, 0)
		back.DelayEach(0, d)
		co, cb := dial(t, out.Addr()), dial(t, back.Addr())
		start := time.Now()
		var wg sync.WaitGroup
		for name, c := range map[string]net.Conn{"out": co, "back": cb} {
			wg.Go(func() {
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := c.Write([]byte(name)); err != nil {
					t.Errorf("%s write: %v", name, err)
				}
				if _, err := bufio.NewReader(c).ReadByte(); err != nil {
					t.Errorf("%s read: %v", name, err)
				}
			})
		}
		// Only the way there of "out" is slow: "back" reaches the server first.
		if first := <-reached; first != "back" {
			t.Fatalf("%q reached the server first, want back (its way there is not delayed)", first)
		}
		wg.Wait()
		// Each round trip took its one delay: a lower bound, not a timing guess.
		if got := time.Since(start); got < d {
			t.Fatalf("round trips took %v, want >= %v", got, d)
		}
		// Delay puts both directions back together.
		back.Delay(0)
		roundTrip(t, cb, "undelayed")
	})

	t.Run("DelayFromStartsAtTheChosenChunk", func(t *testing.T) {
		p, c := dialProxy(t, target)
		const d = 200 * time.Millisecond
		p.DelayFrom(d, func(b []byte) bool { return strings.HasPrefix(string(b), "W") })
		// Chunks before the chosen one pass as before, and the delay waits.
		roundTrip(t, c, "before")
		if !p.DelayedSince().IsZero() {
			t.Fatal("the delay began before its first chunk was sent")
		}
		// The chosen chunk and every byte after it, both ways, arrive d late.
		for _, msg := range []string{"Write", "after"} {
			start := time.Now()
			roundTrip(t, c, msg)
			if got := time.Since(start); got < 2*d {
				t.Fatalf("round trip of %q took %v, want >= %v", msg, got, 2*d)
			}
		}
		if p.DelayedSince().IsZero() {
			t.Fatal("DelayedSince is zero after the chosen chunk was sent")
		}
		p.Delay(0)
		roundTrip(t, c, "undelayed")
	})

	t.Run("CountsStaleErrorsFromTarget", func(t *testing.T) {
		p, c := dialProxy(t, target)
		// The echo sends each code back once; only what the target sends
		// counts, and a code split across two reads counts once.
		roundTrip(t, c, "hello JF001")
		if got := p.StaleErrors(); got != 1 {
			t.Fatalf("stale errors = %d, want 1", got)
		}
		roundTrip(t, c, "JF0")
		roundTrip(t, c, "01 and JF001")
		if got := p.StaleErrors(); got != 3 {
			t.Fatalf("stale errors = %d, want 3", got)
		}
		// The gate's refusal: division_by_zero's SQLSTATE field; the bare number is not one.
		roundTrip(t, c, "SERROR\x00C2201")
		roundTrip(t, c, "2\x00Mdivision by zero 22012")
		if got := p.StaleErrors(); got != 4 {
			t.Fatalf("stale errors = %d, want 4", got)
		}
	})

	t.Run("CleanupClosesConnections", func(t *testing.T) {
		var c net.Conn
		t.Run("Inner", func(t *testing.T) {
			p := MustProxy(t, target)
			c, _ = net.DialTimeout("tcp", p.Addr(), 5*time.Second)
			if c == nil {
				t.Fatalf("dial proxy failed")
			}
			roundTrip(t, c, "x")
		})
		defer c.Close()
		expectClosed(t, c)
	})
}

// Bytes a client sent before it went away still reach the server when a reply to the client,
// due before them, finds the client gone: the reply is dropped, the bytes are delivered. A
// proxy that closed the connection on that failed write lost a stale leader's last statement,
// and with it the fence's refusal a test was waiting to see.
func TestProxy_DeliversWhatAGoneClientSent(t *testing.T) {
	got := make(chan string, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := Serve(t, ln, func(c net.Conn) {
		var all strings.Builder
		buf := make([]byte, 64)
		for {
			n, err := c.Read(buf)
			all.Write(buf[:n])
			if n > 0 {
				_, _ = c.Write(buf[:n]) // a reply to each chunk
			}
			if err != nil {
				got <- all.String()
				return
			}
		}
	})
	p, c := dialProxy(t, target)
	const d = 300 * time.Millisecond
	p.Delay(d)
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	// "x" reaches the server after d; its reply would reach the client d later. Before that
	// reply is due, the client sends "y" (due after the reply) and goes away.
	time.Sleep(d + d/3)
	if _, err := c.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).SetLinger(0)
	_ = c.Close()
	select {
	case s := <-got:
		if s != "xy" {
			t.Fatalf("the server got %q, want %q: what the client sent before it went was lost", s, "xy")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the end of the connection")
	}
}
