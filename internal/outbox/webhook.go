package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"scheduler"
	"scheduler/internal/egress"
)

// DefaultWebhookTimeout is WebhookConfig.Timeout's default.
const DefaultWebhookTimeout = 30 * time.Second

// WebhookConfig configures a webhook deliverer.
type WebhookConfig struct {
	// Hosts are the only hosts (as in the URL, without the port,
	// compared without case) a webhook may go to. Empty: every webhook
	// is refused. Destinations come from jobs, and a job must not make
	// the leader call what it cannot reach itself (loopback, a cloud's
	// metadata address, the store).
	Hosts []string
	// Timeout bounds one request, response included. Default
	// DefaultWebhookTimeout.
	Timeout time.Duration
	// Transport, optional, is the HTTP transport (a proxy, private CAs).
	Transport http.RoundTripper
}

// Webhook delivers webhook messages: a POST of the message's JSON body
// with the headers Idempotency-Key (the message's key) and Fencing-Token
// (the term's token). A 2xx reply delivers it; 408, 429 and 5xx replies,
// timeouts and network errors are retried; any other reply, redirects
// included (they are not followed), is a permanent failure.
type Webhook struct {
	cfg    WebhookConfig
	client *http.Client
}

// NewWebhook returns a webhook deliverer.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultWebhookTimeout
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("webhook timeout %s: want > 0", cfg.Timeout)
	}
	cfg.Hosts = slices.Clone(cfg.Hosts)
	for i, h := range cfg.Hosts {
		if err := CheckWebhookHost(h); err != nil {
			return nil, err
		}
		cfg.Hosts[i] = strings.ToLower(h)
	}
	transport := cfg.Transport
	if transport == nil {
		transport = egress.Transport() // a message sent once per attempt (package egress)
	}
	return &Webhook{cfg: cfg, client: &http.Client{
		Transport: transport,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}, nil
}

// CheckWebhookHost reports why h cannot be an allowed webhook host: it must
// be a host name or an IP address, without port, path or user info.
func CheckWebhookHost(h string) error {
	if h == "" || strings.ContainsAny(h, ":/@?#[] \t\r\n") {
		return fmt.Errorf("webhook host %q: want a host name or IPv4 address without port or path", h)
	}
	return nil
}

// maxReplyExcerpt is how much of a refusal's status and of its body go into the error.
const maxReplyExcerpt = 512

// Deliver posts m.
func (w *Webhook) Deliver(ctx context.Context, m scheduler.Message, token int64) error {
	u, err := url.Parse(m.Destination)
	switch {
	case err != nil:
		return Permanent(fmt.Errorf("url: %w", err))
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.User != nil:
		return Permanent(fmt.Errorf("url %q: want http or https, a host and no user info", u.Redacted()))
	case !slices.Contains(w.cfg.Hosts, strings.ToLower(u.Hostname())):
		return Permanent(fmt.Errorf("host %q is not among the allowed webhook hosts", u.Hostname()))
	case !json.Valid([]byte(m.Body)):
		return Permanent(errors.New("body is not valid JSON"))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader([]byte(m.Body)))
	if err != nil {
		return Permanent(fmt.Errorf("request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "scheduler-outbox")
	req.Header.Set("Idempotency-Key", m.Key)
	req.Header.Set("Fencing-Token", strconv.FormatInt(token, 10))
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, maxReplyExcerpt))
	// Drained, within limits, so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	status := resp.Status
	if len(status) > maxReplyExcerpt {
		// The receiver chooses the phrase, up to the transport's header limit: keep the error,
		// and each log line and dead notice that carries it, small.
		status = strings.ToValidUTF8(status[:maxReplyExcerpt], "") + "…"
	}
	err = fmt.Errorf("reply %s: %s", status, strings.TrimSpace(strings.ToValidUTF8(string(excerpt), "?")))
	if code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500 {
		return err
	}
	return Permanent(err)
}
