package config

import (
	"fmt"
	"net/mail"
	"time"

	"scheduler/internal/outbox"
)

// OutboxConfig is how the leader delivers the messages that jobs queue in the outbox.
type OutboxConfig struct {
	// SMTP is the mail server e-mails go to. Without Addr no e-mail is sent over SMTP.
	SMTP OutboxSMTPConfig `mapstructure:"smtp"`
	// Log writes e-mails to the daemon's log instead, when SMTP.Addr is empty: for
	// development, so that `make run` shows them without a mail server. Default: false.
	Log bool `mapstructure:"log"`
	// MaxAttempts is how many attempts a message gets before it is dead. Default: 10.
	MaxAttempts int `mapstructure:"max_attempts"`
	// RetryBackoff is the wait after a first failed attempt, doubled after each further one up
	// to an hour (or RetryBackoff when longer), jittered. Default: 30s.
	RetryBackoff time.Duration `mapstructure:"retry_backoff"`
	// Batch is the most messages one claim takes, 1 to 10000. Default: 100.
	Batch int `mapstructure:"batch"`
	// Webhook is where webhooks may go.
	Webhook OutboxWebhookConfig `mapstructure:"webhook"`
}

// OutboxWebhookConfig is where the outbox's webhooks may go.
type OutboxWebhookConfig struct {
	// Hosts are the only hosts (names or IPv4 addresses, without port) a webhook may be posted
	// to; a webhook to any other host is dead at once. Destinations come from jobs, and the
	// leader must not post on a job's behalf to what the job cannot reach (loopback, metadata
	// addresses). Default: empty, every webhook refused.
	Hosts []string `mapstructure:"hosts"`
}

// OutboxSMTPConfig is the SMTP server of the outbox.
type OutboxSMTPConfig struct {
	// Addr is the server's host:port. Default: empty, no SMTP.
	Addr string `mapstructure:"addr"`
	// From is the sender's address, also the domain of the Message-IDs. Required with Addr.
	From string `mapstructure:"from"`
	// Username and Password authenticate (PLAIN, over TLS or to localhost) when Username is set.
	Username string `mapstructure:"username"`
	Password string `mapstructure:"password"`
	// TLS is starttls (upgrade, refuse a server without it), tls (implicit, port 465) or none
	// (a relay on this host). Default: starttls.
	TLS string `mapstructure:"tls"`
}

// maxOutboxBatch bounds outbox.batch: one claim must stay short.
const maxOutboxBatch = 10000

// validateOutbox checks the outbox keys, and that every job that queues e-mail has a deliverer
// for it.
func (c *Config) validateOutbox(p *problems) {
	o := c.Outbox
	if o.SMTP.Addr != "" {
		if msg := checkHostPort(o.SMTP.Addr); msg != "" {
			p.add("outbox.smtp.addr", "must be host:port (or empty for no SMTP), got %q: %s", o.SMTP.Addr, msg)
		}
		from, err := mail.ParseAddress(o.SMTP.From)
		if err != nil || from.Address != o.SMTP.From {
			p.add("outbox.smtp.from", "must be one e-mail address while outbox.smtp.addr is set, got %q", o.SMTP.From)
		} else if _, err := outbox.NewSMTP(SMTPConfig(o.SMTP)); err != nil && checkHostPort(o.SMTP.Addr) == "" {
			// What run would refuse, validate refuses: the deliverer's own checks, such as port 0.
			p.add("outbox.smtp.addr", "%v", err)
		}
	}
	if o.SMTP.Password != "" && o.SMTP.Username == "" {
		p.add("outbox.smtp.password", "is set but outbox.smtp.username is empty")
	}
	p.enum("outbox.smtp.tls", o.SMTP.TLS, string(outbox.STARTTLS), string(outbox.TLS), string(outbox.NoTLS))
	if o.MaxAttempts < 1 || o.MaxAttempts > 1000 {
		p.add("outbox.max_attempts", "must be from 1 to 1000, got %d", o.MaxAttempts)
	}
	if o.RetryBackoff <= 0 {
		p.add("outbox.retry_backoff", "must be positive, got %s", o.RetryBackoff)
	}
	if o.Batch < 1 || o.Batch > maxOutboxBatch {
		p.add("outbox.batch", "must be from 1 to %d, got %d", maxOutboxBatch, o.Batch)
	}
	for i, h := range o.Webhook.Hosts {
		if err := outbox.CheckWebhookHost(h); err != nil {
			p.add(fmt.Sprintf("outbox.webhook.hosts[%d]", i), "must be a host name or IPv4 address without port or path, got %q", h)
		}
	}
	if o.SMTP.Addr != "" || o.Log {
		return
	}
	for i, j := range c.Jobs {
		if to, _ := j.Params["email_to"].(string); j.Type == "builtin" && j.Builtin == "invoices" && to != "" {
			p.add(fmt.Sprintf("jobs[%d].params.email_to", i),
				"queues e-mail, but no deliverer is configured: set outbox.smtp.addr, or outbox.log: true to log the e-mails")
		}
	}
}

// SMTPConfig is the SMTP deliverer's configuration of the outbox.smtp keys.
func SMTPConfig(c OutboxSMTPConfig) outbox.SMTPConfig {
	return outbox.SMTPConfig{Addr: c.Addr, From: c.From, Username: c.Username, Password: c.Password, TLS: outbox.TLSMode(c.TLS)}
}
