package outbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"scheduler"
)

// TLSMode is how the SMTP deliverer secures its connection.
type TLSMode string

// The TLS modes.
const (
	// STARTTLS upgrades a plain connection and refuses a server that does
	// not offer it (the default).
	STARTTLS TLSMode = "starttls"
	// TLS connects with TLS from the start (implicit TLS, port 465).
	TLS TLSMode = "tls"
	// NoTLS sends in the clear: for a relay on the same host only.
	NoTLS TLSMode = "none"
)

// DefaultSMTPTimeout is SMTPConfig.Timeout's default.
const DefaultSMTPTimeout = 30 * time.Second

// SMTPConfig configures an SMTP deliverer.
type SMTPConfig struct {
	// Addr is the server's host:port. Required.
	Addr string
	// From is the sender's address, also the right side of the
	// Message-IDs. Required.
	From string
	// Username and Password, when Username is set, authenticate with
	// PLAIN (only over TLS, or to a server on localhost).
	Username, Password string
	// TLS is how the connection is secured. Default STARTTLS.
	TLS TLSMode
	// TLSConfig, optional, verifies the server (a private CA, say). Its
	// ServerName defaults to Addr's host.
	TLSConfig *tls.Config
	// Timeout bounds the connection and each command. Default
	// DefaultSMTPTimeout.
	Timeout time.Duration
}

// SMTP delivers e-mail messages: one connection per message, the message's
// key as its Message-ID, so that a repeat can be recognised.
type SMTP struct {
	cfg          SMTPConfig
	host         string
	port         int
	from, domain string
}

// NewSMTP validates cfg and returns an SMTP deliverer. It does not connect.
func NewSMTP(cfg SMTPConfig) (*SMTP, error) {
	host, p, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("smtp addr %q: %w", cfg.Addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("smtp addr %q: port %q: want 1 to 65535", cfg.Addr, p)
	}
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("smtp from %q: %w", cfg.From, err)
	}
	_, domain, _ := strings.Cut(from.Address, "@")
	switch cfg.TLS {
	case "":
		cfg.TLS = STARTTLS
	case STARTTLS, TLS, NoTLS:
	default:
		return nil, fmt.Errorf("smtp tls %q: want %q, %q or %q", cfg.TLS, STARTTLS, TLS, NoTLS)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultSMTPTimeout
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("smtp timeout %s: want > 0", cfg.Timeout)
	}
	return &SMTP{cfg: cfg, host: host, port: port, from: from.String(), domain: domain}, nil
}

// Deliver sends m to its one recipient. An invalid recipient and a
// permanent (5xx) refusal by the server are permanent errors.
func (s *SMTP) Deliver(ctx context.Context, m scheduler.Message, _ int64) error {
	msg, err := s.message(m)
	if err != nil {
		return Permanent(err)
	}
	conn := &boundConn{ctx: ctx, tls: s.tlsConfig(), implicit: s.cfg.TLS == TLS}
	defer conn.release()
	c, err := gomail.NewClient(s.host, append(s.options(), gomail.WithDialContextFunc(conn.dial))...)
	if err != nil {
		return Permanent(fmt.Errorf("smtp client: %w", err))
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		if msg.IsDelivered() {
			// The server accepted the message (its reply to the end of DATA); what failed came
			// after it (the RSET or QUIT that close the session) and changes nothing for the
			// recipient: a retry would send the message again.
			return nil
		}
		if conn.flooded() {
			return fmt.Errorf("smtp server %s sent more than %d bytes in one session: %w", s.cfg.Addr, maxSessionRead, cut(err))
		}
		if ctx.Err() != nil {
			// The connection was closed under the library: the cause is the end of ctx.
			return fmt.Errorf("smtp session to %s cut short: %w: %w", s.cfg.Addr, context.Cause(ctx), cut(err))
		}
		var se *gomail.SendError
		if errors.As(err, &se) && se.ErrorCode() >= 500 && se.ErrorCode() < 600 {
			return Permanent(cut(err))
		}
		return cut(err)
	}
	return nil
}

// maxErrorText is how much of a failed session's error is kept. The error quotes the server's
// replies, which the server writes (up to maxSessionRead), and it goes into the log line and
// the record of every attempt.
const maxErrorText = 1024

// cutError is an error whose text is cut to maxErrorText; it wraps the whole error.
type cutError struct {
	text string
	err  error
}

func (e *cutError) Error() string { return e.text }
func (e *cutError) Unwrap() error { return e.err }

// cut returns err, its text cut to maxErrorText bytes when it is longer.
func cut(err error) error {
	text := err.Error()
	if len(text) <= maxErrorText {
		return err
	}
	return &cutError{text: strings.ToValidUTF8(text[:maxErrorText], "") + "…", err: err}
}

// message builds the e-mail of m.
func (s *SMTP) message(m scheduler.Message) (*gomail.Msg, error) {
	// The destination and subject come from jobs: a line break in them would write headers of
	// the job's choosing (a Bcc to anyone), whatever the mail library encodes.
	if strings.ContainsAny(m.Destination, "\r\n\x00") {
		return nil, fmt.Errorf("recipient %q: line breaks and NUL are not allowed", m.Destination)
	}
	if strings.ContainsAny(m.Subject, "\r\n\x00") {
		return nil, fmt.Errorf("subject %q: line breaks and NUL are not allowed", m.Subject)
	}
	to, err := mail.ParseAddress(m.Destination)
	if err != nil || to.Address != m.Destination {
		return nil, fmt.Errorf("recipient %q: want one plain address", m.Destination)
	}
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	if err := msg.From(s.from); err != nil {
		return nil, fmt.Errorf("sender %q: %w", s.from, err)
	}
	if err := msg.To(to.Address); err != nil {
		return nil, fmt.Errorf("recipient %q: %w", m.Destination, err)
	}
	msg.Subject(m.Subject)
	msg.SetDate()
	msg.SetMessageIDWithValue(m.Key + "@" + s.domain)
	msg.SetBodyString(gomail.TypeTextPlain, m.Body)
	return msg, nil
}

// tlsConfig is the TLS configuration of a connection to the server.
func (s *SMTP) tlsConfig() *tls.Config {
	tc := &tls.Config{ServerName: s.host, MinVersion: tls.VersionTLS12}
	if s.cfg.TLSConfig != nil {
		tc = s.cfg.TLSConfig.Clone()
		if tc.ServerName == "" {
			tc.ServerName = s.host
		}
	}
	return tc
}

func (s *SMTP) options() []gomail.Option {
	opts := []gomail.Option{gomail.WithPort(s.port), gomail.WithTimeout(s.cfg.Timeout), gomail.WithTLSConfig(s.tlsConfig())}
	switch s.cfg.TLS {
	case TLS:
		opts = append(opts, gomail.WithSSL())
	case NoTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	}
	if s.cfg.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthPlain),
			gomail.WithUsername(s.cfg.Username), gomail.WithPassword(s.cfg.Password))
	}
	return opts
}
