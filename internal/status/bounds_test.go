package status

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// serve runs s until the test ends.
func serve(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run=%v", err)
		}
	})
}

// TestServer_ConnectionsPerClient: a client holding connections that send nothing gets
// maxConnsPerClient of them; the server closes each one past that as soon as it takes it, so
// the client cannot spend the daemon's file descriptors.
func TestServer_ConnectionsPerClient(t *testing.T) {
	s := newTestServer(t, &fakeSource{}, fakeDaemon{})
	serve(t, s)
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	const extra = 8
	for range maxConnsPerClient + extra {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// Well within the server's header timeout, which ends idle connections too.
	deadline := time.Now().Add(time.Second)
	errs := make(chan error, len(held))
	for _, c := range held {
		_ = c.SetReadDeadline(deadline)
		go func() {
			_, err := c.Read(make([]byte, 1))
			errs <- err
		}()
	}
	closed := 0
	for range held {
		if err := <-errs; errors.Is(err, io.EOF) {
			closed++
		} else if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read of an idle connection: %v", err)
		}
	}
	if closed != extra {
		t.Fatalf("%d of %d connections closed by the server, want the %d past %d", closed, len(held), extra, maxConnsPerClient)
	}
	// A connection closed makes room for another.
	held[0].Close()
	held = held[1:]
	for {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("/healthz=%d, want 200", resp.StatusCode)
			}
			return
		}
		// Closed: the server had not yet counted the closed connection out.
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServer_SlowBody: a request whose body trickles in is cut when the read timeout ends, not
// held for as long as the client keeps sending.
func TestServer_SlowBody(t *testing.T) {
	s, err := New(Config{Addr: "127.0.0.1:0", Explain: testExplain, ReadTimeout: time.Second},
		&fakeSource{}, fakeDaemon{}, mustMetrics(t, "auto"), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s)
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\nx")
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = io.Copy(io.Discard, c)
	}()
	for i := 0; ; i++ {
		select {
		case <-ended:
			return
		case <-time.After(200 * time.Millisecond):
		}
		if i == 150 {
			t.Fatal("a body sent a byte every 200ms still held its connection after 30s")
		}
		if _, err := c.Write([]byte("x")); err != nil {
			return // closed by the server
		}
	}
}

// TestServer_LoopbackHosts: a server on a loopback address answers requests addressed to
// localhost or a loopback address, and refuses one addressed to another name (a page whose name
// was made to resolve to 127.0.0.1).
func TestServer_LoopbackHosts(t *testing.T) {
	s := newTestServer(t, &fakeSource{}, fakeDaemon{})
	serve(t, s)
	_, port, _ := net.SplitHostPort(s.Addr().String())
	for host, want := range map[string]int{
		"127.0.0.1:" + port:          http.StatusOK,
		"localhost:" + port:          http.StatusOK,
		"LOCALHOST":                  http.StatusOK,
		"[::1]:" + port:              http.StatusOK,
		"127.0.0.2":                  http.StatusOK,
		"attacker.example:" + port:   http.StatusMisdirectedRequest,
		"attacker.example":           http.StatusMisdirectedRequest,
		"192.0.2.1:" + port:          http.StatusMisdirectedRequest,
		"localhost.attacker.example": http.StatusMisdirectedRequest,
	} {
		req, _ := http.NewRequest("GET", "http://"+s.Addr().String()+"/status", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d %q, want %d", host, resp.StatusCode, strings.TrimSpace(string(b)), want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	if !loopbackHost("") {
		t.Error("a request without a Host (HTTP/1.0) refused: no browser sends one")
	}
}

// TestServer_AdminTokenRotated: a token set anew (a reload of a rotated token file) is the only
// one accepted from the next request on; none makes the console read-only.
func TestServer_AdminTokenRotated(t *testing.T) {
	const old, rotated = "0123456789abcdef0123", "fedcba9876543210fedc"
	ctl := &fakeControl{}
	s := newConsoleServer(t, &fakeSource{}, fakeConsole{}, fakeDaemon{table: []Entry{{Name: "alpha", Enabled: true}}}, old, ctl)
	send := func(token string) int {
		req, _ := http.NewRequest("POST", "/api/jobs/alpha/resume", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set(ConsoleHeader, "1")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	if code := send(old); code != http.StatusOK {
		t.Fatalf("the configured token: %d, want 200", code)
	}
	if changed, err := s.SetAdminToken(rotated); err != nil || !changed {
		t.Fatalf("SetAdminToken of a new token=%v, %v; want true, nil", changed, err)
	}
	if changed, err := s.SetAdminToken(rotated); err != nil || changed {
		t.Fatalf("SetAdminToken of the same token=%v, %v; want false, nil", changed, err)
	}
	if code := send(old); code != http.StatusUnauthorized {
		t.Errorf("the old token after a rotation: %d, want 401", code)
	}
	if code := send(rotated); code != http.StatusOK {
		t.Errorf("the new token: %d, want 200", code)
	}
	if _, err := s.SetAdminToken(""); err != nil {
		t.Fatal(err)
	}
	if code := send(rotated); code != http.StatusNotFound {
		t.Errorf("an action once the token is gone: %d, want 404 (read-only)", code)
	}
	if code, body := get(s, "/api/console"); code != http.StatusOK || !strings.Contains(body, `"admin": false`) {
		t.Errorf("/api/console=%d %s, want admin false", code, body)
	}
	bare := newTestServer(t, &fakeSource{}, fakeDaemon{})
	if _, err := bare.SetAdminToken(rotated); err == nil {
		t.Error("a token set on a server without a console and its control was accepted")
	}
}

// TestServer_ConsoleActionsCheckTheClusterTable: a replica's console refuses an action on a job
// that the cluster's table (the leader's, which the control reads) does not hold, even when its
// own file has it, and the message names where it looked.
func TestServer_ConsoleActionsCheckTheClusterTable(t *testing.T) {
	const token = "0123456789abcdef0123"
	ctl := &fakeControl{jobs: []string{"alpha"}}
	local := []Entry{{Name: "alpha", Enabled: true}, {Name: "extra", Enabled: true}}
	s := newConsoleServer(t, &fakeSource{}, fakeConsole{}, fakeDaemon{table: local}, token, ctl)
	for _, act := range []string{"pause", "resume", "trigger"} {
		req, _ := http.NewRequest("POST", "/api/jobs/extra/"+act, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set(ConsoleHeader, "1")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "leader's table") {
			t.Errorf("%s of a job only in this replica's file: %d %s, want 404 naming the leader's table", act, rec.Code, rec.Body)
		}
	}
	if len(ctl.calls) != 0 {
		t.Fatalf("actions on a job outside the cluster's table were carried out: %v", ctl.calls)
	}
}
