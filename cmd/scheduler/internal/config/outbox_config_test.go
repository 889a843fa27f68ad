package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"scheduler/cmd/scheduler/internal/config/configtest"
)

const invoicesEmailJob = `
jobs:
  - name: invoices
    schedule: "@every 10s"
    type: builtin
    builtin: invoices
    params: {clients: 3, email_to: "client-{client}@example.test"}
`

func TestLoad_Outbox(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string // substrings of the error; none: loads
	}{
		{"EmailWithoutDeliverer", invoicesEmailJob,
			[]string{"jobs[0].params.email_to: queues e-mail, but no deliverer is configured: set outbox.smtp.addr, or outbox.log: true"}},
		{"EmailToTheLog", invoicesEmailJob + "outbox: {log: true}\n", nil},
		{"EmailOverSMTP", invoicesEmailJob + "outbox: {smtp: {addr: \"mail:25\", from: billing@example.test, tls: none}}\n", nil},
		{"NoEmailNoDeliverer", configtest.MinimalJob, nil},
		{"PortZero", configtest.MinimalJob + "outbox: {smtp: {addr: \"mail:0\", from: billing@example.test}}\n",
			[]string{`outbox.smtp.addr: smtp addr "mail:0": port "0": want 1 to 65535`}},
		{"BadKeys", configtest.MinimalJob + `outbox:
  smtp: {addr: "mail", from: "Billing <b@example.test>", password: x, tls: ssl}
  max_attempts: 0
  retry_backoff: 0s
  batch: 10001
`, []string{
			`outbox.smtp.addr: must be host:port`,
			`outbox.smtp.from: must be one e-mail address while outbox.smtp.addr is set`,
			`outbox.smtp.password: is set but outbox.smtp.username is empty`,
			`outbox.smtp.tls: must be one of starttls, tls, none`,
			`outbox.max_attempts: must be from 1 to 1000, got 0`,
			`outbox.retry_backoff: must be positive, got 0s`,
			`outbox.batch: must be from 1 to 10000, got 10001`,
		}},
		{"BadWebhookHosts", configtest.MinimalJob + "outbox: {webhook: {hosts: [hooks.example.test, \"h:80\", \"\", \"h/x\"]}}\n", []string{
			`outbox.webhook.hosts[1]: must be a host name or IPv4 address without port or path, got "h:80"`,
			`outbox.webhook.hosts[2]: must be a host name or IPv4 address without port or path, got ""`,
			`outbox.webhook.hosts[3]: must be a host name or IPv4 address without port or path, got "h/x"`,
		}},
		{"WebhookHosts", configtest.MinimalJob + "outbox: {webhook: {hosts: [hooks.example.test, 10.0.0.7]}}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loadWant(t, configtest.Write(t, tc.body), nil, tc.want...)
		})
	}
}

func TestLoad_OutboxValues(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "smtp_password")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(configtest.Write(t, configtest.MinimalJob+`outbox:
  smtp: {addr: "mail.example.test:465", from: billing@example.test, username: billing, password_file: `+secret+`, tls: tls}
  max_attempts: 3
  retry_backoff: 2m
  batch: 50
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := OutboxConfig{SMTP: OutboxSMTPConfig{Addr: "mail.example.test:465", From: "billing@example.test",
		Username: "billing", Password: "s3cret", TLS: "tls"}, MaxAttempts: 3, RetryBackoff: 2 * time.Minute, Batch: 50,
		Webhook: OutboxWebhookConfig{Hosts: []string{}}}
	if !reflect.DeepEqual(cfg.Outbox, want) {
		t.Fatalf("outbox = %+v, want %+v", cfg.Outbox, want)
	}
	found := false
	for _, s := range cfg.Secrets() {
		found = found || s == "s3cret"
	}
	if !found {
		t.Fatal("the SMTP password is not among the secrets scrubbed from runs' output")
	}
	if _, err := Load(configtest.Write(t, configtest.MinimalJob+"outbox: {smtp: {password: a, password_file: "+secret+"}}\n"), nil); err == nil ||
		!strings.Contains(err.Error(), "outbox.smtp.password and outbox.smtp.password_file are both set") {
		t.Fatalf("both password and its file: err = %v", err)
	}
}

// TestLoadConfig_OutboxWebhookHosts: no webhook host is allowed unless listed, in the file or
// in the environment as a comma-separated list.
func TestLoadConfig_OutboxWebhookHosts(t *testing.T) {
	cfg, err := Load(configtest.Write(t, configtest.MinimalJob), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Outbox.Webhook.Hosts) != 0 {
		t.Fatalf("outbox.webhook.hosts = %q by default, want none", cfg.Outbox.Webhook.Hosts)
	}
	cfg, err = Load(configtest.Write(t, configtest.MinimalJob+"outbox: {webhook: {hosts: [a.example.test]}}\n"), nil)
	if err != nil || !reflect.DeepEqual(cfg.Outbox.Webhook.Hosts, []string{"a.example.test"}) {
		t.Fatalf("outbox.webhook.hosts from the file = %v (err %v), want [a.example.test]", cfg.Outbox.Webhook.Hosts, err)
	}
	cfg, err = Load(configtest.Write(t, configtest.MinimalJob), []string{"SCHEDULER_OUTBOX_WEBHOOK_HOSTS=a.example.test, b.example.test"})
	if err != nil || !reflect.DeepEqual(cfg.Outbox.Webhook.Hosts, []string{"a.example.test", "b.example.test"}) {
		t.Fatalf("outbox.webhook.hosts from the environment = %v (err %v), want [a.example.test b.example.test]", cfg.Outbox.Webhook.Hosts, err)
	}
}
