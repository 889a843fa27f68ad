package testenv

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/mail"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// SMTPTLS is how an SMTP test server offers TLS.
type SMTPTLS int

// The TLS offers of an SMTP test server.
const (
	SMTPPlain    SMTPTLS = iota // no TLS at all
	SMTPStartTLS                // STARTTLS on a plain connection
	SMTPImplicit                // TLS from the first byte
)

// SMTPOptions configure MustSMTP.
type SMTPOptions struct {
	// TLS is how the server offers TLS, with a self-signed certificate for
	// 127.0.0.1 and localhost (SMTPServer.RootCAs trusts it).
	TLS SMTPTLS
	// Username and Password, when Username is set, are the one PLAIN
	// login the server accepts, and it then refuses mail without it.
	Username, Password string
	// Refuse, if set, is asked about every recipient: a non-zero code
	// refuses it with that SMTP reply code and text.
	Refuse func(rcpt string) (code int, text string)
	// Delay, if set, is waited before the server answers each MAIL FROM: a slow receiver, so
	// that a sender is caught in the middle of its deliveries.
	Delay time.Duration
	// Stall, if set, makes the server read each message's DATA and then
	// not answer until Stall is closed (or the server stops): a receiver
	// that hangs in the middle of DATA. Nothing is accepted meanwhile.
	Stall <-chan struct{}
}

// SMTPMessage is one message an SMTP test server accepted.
type SMTPMessage struct {
	From      string
	To        []string
	MessageID string // the header as sent, with its angle brackets
	Subject   string
	Body      string
	TLS       bool   // the session was encrypted
	User      string // the authenticated user, if any
	// At is when the server accepted the message (its reply to the end of DATA).
	At time.Time
}

// SMTPServer is a real SMTP server on a loopback port that keeps every
// message it accepts in memory.
type SMTPServer struct {
	// Addr is the server's host:port.
	Addr string
	// RootCAs trusts the server's certificate.
	RootCAs *x509.CertPool

	opts    SMTPOptions
	stopped chan struct{} // closed when the server stops
	stalled chan struct{} // receives each DATA that Stall holds
	mu      sync.Mutex
	msgs    []SMTPMessage
}

// MustSMTP starts an SMTP server on 127.0.0.1 and stops it in tb.Cleanup.
func MustSMTP(tb testing.TB, opts SMTPOptions) *SMTPServer {
	tb.Helper()
	cert, pool, err := selfSigned()
	if err != nil {
		tb.Fatalf("testenv: smtp certificate: %v", err)
	}
	s := &SMTPServer{RootCAs: pool, opts: opts, stopped: make(chan struct{}), stalled: make(chan struct{}, 64)}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &smtpSession{s: s, conn: c}, nil
	}))
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 30*time.Second, 30*time.Second
	srv.MaxMessageBytes = 4 << 20
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	var ln net.Listener
	switch opts.TLS {
	case SMTPImplicit:
		ln, err = tls.Listen("tcp", "127.0.0.1:0", tlsConfig)
	case SMTPStartTLS:
		srv.TLSConfig = tlsConfig
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	default:
		srv.AllowInsecureAuth = true
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		tb.Fatalf("testenv: smtp listen: %v", err)
	}
	s.Addr = ln.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	tb.Cleanup(func() {
		close(s.stopped)
		_ = srv.Close()
		// Close misses a listener that Serve has not registered yet (a test that ends at
		// once): closed here too, its Accept fails and Serve returns.
		_ = ln.Close()
		<-done
	})
	return s
}

// Messages returns the messages accepted so far, in order.
func (s *SMTPServer) Messages() []SMTPMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SMTPMessage(nil), s.msgs...)
}

// Stalled receives once for each DATA that SMTPOptions.Stall holds, when
// the server has read it and is not answering.
func (s *SMTPServer) Stalled() <-chan struct{} { return s.stalled }

// MessageIDs counts the accepted messages by Message-ID.
func (s *SMTPServer) MessageIDs() map[string]int {
	ids := map[string]int{}
	for _, m := range s.Messages() {
		ids[m.MessageID]++
	}
	return ids
}

// smtpSession is one client connection.
type smtpSession struct {
	s    *SMTPServer
	conn *smtp.Conn
	user string
	from string
	to   []string
}

func (ss *smtpSession) AuthMechanisms() []string {
	if ss.s.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != ss.s.opts.Username || password != ss.s.opts.Password {
			return errors.New("invalid credentials")
		}
		ss.user = username
		return nil
	}), nil
}

func (ss *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.opts.Username != "" && ss.user == "" {
		return smtp.ErrAuthRequired
	}
	ss.from = from
	if ss.s.opts.Delay > 0 {
		time.Sleep(ss.s.opts.Delay)
	}
	return nil
}

func (ss *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if ss.s.opts.Refuse != nil {
		if code, text := ss.s.opts.Refuse(to); code != 0 {
			return &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCodeNotSet, Message: text}
		}
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *smtpSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if ss.s.opts.Stall != nil {
		select {
		case ss.s.stalled <- struct{}{}:
		default:
		}
		select {
		case <-ss.s.opts.Stall:
		case <-ss.s.stopped:
			return errors.New("server stopped")
		}
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCodeNotSet, Message: "unparsable message"}
	}
	body, _ := io.ReadAll(msg.Body)
	_, isTLS := ss.conn.TLSConnectionState()
	ss.s.mu.Lock()
	ss.s.msgs = append(ss.s.msgs, SMTPMessage{From: ss.from, To: append([]string(nil), ss.to...),
		MessageID: msg.Header.Get("Message-ID"), Subject: msg.Header.Get("Subject"), Body: string(body),
		TLS: isTLS, User: ss.user, At: time.Now()})
	ss.s.mu.Unlock()
	return nil
}

func (ss *smtpSession) Reset() { ss.from, ss.to = "", nil }

func (ss *smtpSession) Logout() error { return nil }

// selfSigned returns a certificate for 127.0.0.1 and localhost and a pool
// that trusts it.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}
