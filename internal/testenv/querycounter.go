package testenv

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Untyped requests a Postgres client may send before its startup message
// (the protocol's SSLRequest and GSSENCRequest codes).
const (
	pgSSLRequest    = 80877103
	pgGSSENCRequest = 80877104
)

// QueryCounter is a TCP proxy in front of a Postgres server that counts the
// messages its clients send, by message type: 'Q' is a simple query (one
// round trip however many statements it holds), 'P' a parse and 'S' a sync
// of the extended protocol. It tells how many messages a client really sent
// for a script, which neither the client's output nor the server's
// statement counts show. It refuses TLS and GSS encryption (it could not
// read the messages), so clients connect with sslmode=disable or prefer.
type QueryCounter struct {
	ln     net.Listener
	target string // the server's host:port
	dsn    string // the DSN given, pointed at the counter
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	counts map[byte]int64
	conns  map[net.Conn]struct{}
}

// MustQueryCounter starts a QueryCounter on a free loopback port in front of
// the server of dsn (a postgres:// URL, as MustDatabase returns). It is
// closed in tb.Cleanup, its connections with it.
func MustQueryCounter(tb testing.TB, dsn string) *QueryCounter {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		tb.Fatalf("testenv: query counter: dsn %q: want a postgres:// URL with a host (%v)", dsn, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testenv: query counter listen: %v", err)
	}
	target := u.Host
	u.Host = ln.Addr().String()
	q := &QueryCounter{ln: ln, target: target, dsn: u.String(), counts: map[byte]int64{}, conns: map[net.Conn]struct{}{}}
	q.wg.Add(1)
	go q.acceptLoop()
	tb.Cleanup(q.close)
	return q
}

// Addr returns the address clients connect to, "127.0.0.1:port".
func (q *QueryCounter) Addr() string { return q.ln.Addr().String() }

// DSN returns the DSN the counter was started with, its host and port
// replaced by the counter's: a client given it connects through the counter.
func (q *QueryCounter) DSN() string { return q.dsn }

// Count returns how many messages of type kind clients have sent so far,
// over every connection.
func (q *QueryCounter) Count(kind byte) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.counts[kind]
}

func (q *QueryCounter) close() {
	q.mu.Lock()
	q.closed = true
	for c := range q.conns {
		_ = c.Close()
	}
	q.mu.Unlock()
	_ = q.ln.Close()
	q.wg.Wait()
}

// track registers c for close; it reports false (and closes c) once the
// counter is closed.
func (q *QueryCounter) track(c net.Conn) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		_ = c.Close()
		return false
	}
	q.conns[c] = struct{}{}
	return true
}

func (q *QueryCounter) untrack(c net.Conn) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.conns, c)
	_ = c.Close()
}

func (q *QueryCounter) acceptLoop() {
	defer q.wg.Done()
	for {
		client, err := q.ln.Accept()
		if err != nil {
			return
		}
		if !q.track(client) {
			return
		}
		q.wg.Add(1)
		go q.serve(client)
	}
}

// serve relays one connection: the server's bytes as they come, the
// client's message by message, counted.
func (q *QueryCounter) serve(client net.Conn) {
	defer q.wg.Done()
	defer q.untrack(client)
	server, err := net.Dial("tcp", q.target)
	if err != nil {
		return
	}
	if !q.track(server) {
		return
	}
	defer q.untrack(server)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(client, server)
		_ = client.Close()
	}()
	_ = q.relayClient(client, server)
	_ = server.Close()
	<-done
}

// relayClient forwards the client's startup and then each typed message,
// counting the typed ones.
func (q *QueryCounter) relayClient(client, server net.Conn) error {
	r := bufio.NewReader(client)
	for {
		msg, err := readUntyped(r)
		if err != nil {
			return err
		}
		code := binary.BigEndian.Uint32(msg[4:8])
		if code != pgSSLRequest && code != pgGSSENCRequest {
			if _, err := server.Write(msg); err != nil {
				return err
			}
			break
		}
		// Refuse the encryption: the client goes on in the clear (or
		// gives up, when it requires encryption).
		if _, err := client.Write([]byte{'N'}); err != nil {
			return err
		}
	}
	for {
		var head [5]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return err
		}
		n := int64(binary.BigEndian.Uint32(head[1:])) - 4
		if n < 0 {
			return errors.New("testenv: query counter: bad message length")
		}
		q.mu.Lock()
		q.counts[head[0]]++
		q.mu.Unlock()
		if _, err := server.Write(head[:]); err != nil {
			return err
		}
		if _, err := io.CopyN(server, r, n); err != nil {
			return err
		}
	}
}

// readUntyped reads a message without a type byte (startup, SSLRequest):
// its length, which counts itself, then the rest.
func readUntyped(r *bufio.Reader) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n < 8 || n > 1<<16 {
		return nil, fmt.Errorf("testenv: query counter: bad startup length %d", n)
	}
	msg := make([]byte, n)
	copy(msg, head[:])
	if _, err := io.ReadFull(r, msg[4:]); err != nil {
		return nil, err
	}
	return msg, nil
}
