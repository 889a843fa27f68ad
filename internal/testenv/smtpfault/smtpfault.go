// Package smtpfault is an SMTP server for tests that breaks the protocol on purpose at one
// point of the session: it drops the connection or refuses a command after it accepted a
// message, drops it before its reply to the end of DATA, or sends a reply without end. It
// speaks just enough SMTP for a client to get there (EHLO, MAIL, RCPT, DATA, RSET, NOOP,
// QUIT), listens on loopback and stops when the test ends. It is imported only from _test.go
// files.
package smtpfault

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"testing"

	"scheduler/internal/testenv"
)

// Fault is where the server breaks the session.
type Fault int

// The faults.
const (
	// None is a well-behaved server.
	None Fault = iota
	// DropAfterData reads the message to its final "." and closes the connection without
	// replying: the client cannot tell whether the message was taken. Nothing is accepted.
	DropAfterData
	// DropAtRset accepts the message (250 to its end) and closes the connection when the
	// client sends RSET.
	DropAtRset
	// RefuseRset accepts the message and answers RSET with 502.
	RefuseRset
	// DropAtQuit accepts the message and closes the connection when the client sends QUIT.
	DropAtQuit
	// RefuseQuit accepts the message, answers QUIT with 554 and keeps the connection open
	// until the client closes it.
	RefuseQuit
	// FloodGreeting sends a multi-line greeting ("220-" lines) of Options.Flood bytes that
	// never ends with its last line, then waits for the client to close.
	FloodGreeting
	// FloodLine sends a greeting of one line of Options.Flood bytes without its line end,
	// then waits for the client to close.
	FloodLine
	// FloodEHLO greets normally and answers EHLO with Options.Flood bytes of "250-" lines
	// that never end, then waits for the client to close.
	FloodEHLO
	// LongRefusal answers RCPT with a 550 whose text is one line of Options.Flood bytes.
	LongRefusal
)

// Options configure Start.
type Options struct {
	// Fault is where the session breaks.
	Fault Fault
	// Flood is how many bytes a flooding fault sends. Default 16 MiB.
	Flood int
}

// Server is a running fault server.
type Server struct {
	// Addr is the server's host:port.
	Addr string

	opts     Options
	mu       sync.Mutex
	accepted []string // Message-IDs of the messages answered 250, in order
	closed   int      // connections the client closed while the server waited
}

// Start starts a server on 127.0.0.1 and stops it when tb ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if opts.Flood == 0 {
		opts.Flood = 16 << 20
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("smtpfault: listen: %v", err)
	}
	s := &Server{opts: opts}
	s.Addr = testenv.Serve(tb, ln, s.session)
	return s
}

// Accepted returns the Message-IDs (with their angle brackets) of the messages the server
// answered 250 to, in order.
func (s *Server) Accepted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.accepted...)
}

// ClientClosed counts the connections the client closed while the server still held them open.
func (s *Server) ClientClosed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// session serves one connection; it returns when the script is over or the connection is gone.
func (s *Server) session(c net.Conn) {
	defer func() { _ = c.Close() }()
	r := bufio.NewReader(c)
	switch s.opts.Fault {
	case FloodGreeting:
		s.flood(c, r, "220-")
		return
	case FloodLine:
		s.flood(c, r, "")
		return
	}
	if !s.reply(c, "220 smtpfault ESMTP") {
		return
	}
	var id string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		verb, _, _ := strings.Cut(strings.ToUpper(strings.TrimSpace(line)), " ")
		switch verb {
		case "EHLO":
			if s.opts.Fault == FloodEHLO {
				s.flood(c, r, "250-")
				return
			}
			s.reply(c, "250-smtpfault\r\n250 8BITMIME")
		case "DATA":
			s.reply(c, "354 end with <CRLF>.<CRLF>")
			var ok bool
			if id, ok = readData(r); !ok {
				return
			}
			if s.opts.Fault == DropAfterData {
				return
			}
			s.mu.Lock()
			s.accepted = append(s.accepted, id)
			s.mu.Unlock()
			s.reply(c, "250 queued")
		case "RCPT":
			if s.opts.Fault == LongRefusal {
				s.reply(c, "550 "+strings.Repeat("n", s.opts.Flood))
				continue
			}
			s.reply(c, "250 ok")
		case "RSET":
			switch s.opts.Fault {
			case DropAtRset:
				return
			case RefuseRset:
				s.reply(c, "502 command not implemented")
			default:
				s.reply(c, "250 reset")
			}
		case "QUIT":
			switch s.opts.Fault {
			case DropAtQuit:
				return
			case RefuseQuit:
				s.reply(c, "554 not now")
				s.waitClose(r)
				return
			}
			s.reply(c, "221 bye")
			return
		default:
			s.reply(c, "250 ok")
		}
	}
}

// reply writes a reply's lines, reporting whether the connection took them.
func (s *Server) reply(c net.Conn, text string) bool {
	_, err := io.WriteString(c, text+"\r\n")
	return err == nil
}

// flood writes Options.Flood bytes of lines starting with prefix (one line without its end
// when prefix is empty), then waits for the client to close the connection.
func (s *Server) flood(c net.Conn, r *bufio.Reader, prefix string) {
	line := []byte(prefix + strings.Repeat("x", 1000) + "\r\n")
	if prefix == "" {
		line = append([]byte("220 "), bytes.Repeat([]byte("x"), 1000)...)
	}
	for sent := 0; sent < s.opts.Flood; sent += len(line) {
		if _, err := c.Write(line); err != nil {
			return
		}
	}
	s.waitClose(r)
}

// waitClose reads until the client closes the connection, and counts it.
func (s *Server) waitClose(r *bufio.Reader) {
	if _, err := io.Copy(io.Discard, r); err == nil {
		s.mu.Lock()
		s.closed++
		s.mu.Unlock()
	}
}

// readData reads a message up to its final "." line and returns its Message-ID.
func readData(r *bufio.Reader) (string, bool) {
	var raw bytes.Buffer
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", false
		}
		if line == ".\r\n" {
			break
		}
		raw.WriteString(strings.TrimPrefix(line, "."))
	}
	h, err := textproto.NewReader(bufio.NewReader(&raw)).ReadMIMEHeader()
	if err != nil && len(h) == 0 {
		return "", true
	}
	return h.Get("Message-Id"), true
}
