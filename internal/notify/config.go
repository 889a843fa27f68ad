package notify

import (
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"
)

// MaxAfter bounds Config.After: the store reads that many runs back to count a streak.
const MaxAfter = 1000

// Config is a job's notify keys, the one check of them and the Policy they make.
type Config struct {
	// On are the events that notify: failed, fenced, missed, dead. Empty: none.
	On []string `mapstructure:"on"`
	// Email are the addresses notifications are mailed to, one address each.
	Email []string `mapstructure:"email"`
	// Webhook is an http or https URL notifications are posted to, on a host of
	// outbox.webhook.hosts. Empty: none.
	Webhook string `mapstructure:"webhook"`
	// After notifies only the After-th consecutive failure, not again until a success resets
	// the count. Default: 0, every failure.
	After int `mapstructure:"after"`
}

// Problem is one thing wrong with a Config, at a key path relative to the notify block (on[1],
// email[0], webhook, after).
type Problem struct {
	Key     string
	Message string
}

// Set reports whether any key of c is set.
func (c Config) Set() bool {
	return len(c.On) > 0 || len(c.Email) > 0 || c.Webhook != "" || c.After != 0
}

// Check returns the problems of c. hosts are the allowed webhook hosts (outbox.webhook.hosts);
// canMail says whether e-mail has a deliverer (outbox.smtp.addr or outbox.log).
func (c Config) Check(hosts []string, canMail bool) []Problem {
	var ps []Problem
	add := func(key, format string, args ...any) {
		ps = append(ps, Problem{Key: key, Message: fmt.Sprintf(format, args...)})
	}
	for i, ev := range c.On {
		if !slices.Contains(Events, Event(ev)) {
			add(fmt.Sprintf("on[%d]", i), "must be one of failed, fenced, missed, dead; got %q", ev)
		}
	}
	for i, to := range c.Email {
		if a, err := mail.ParseAddress(to); err != nil || a.Address != to {
			add(fmt.Sprintf("email[%d]", i), "must be one e-mail address, got %q", to)
		}
	}
	if len(c.Email) > 0 && !canMail {
		add("email", "notifies by e-mail, but no deliverer is configured: set outbox.smtp.addr, or outbox.log: true to log the e-mails")
	}
	if c.Webhook != "" {
		if msg := checkWebhook(c.Webhook, hosts); msg != "" {
			add("webhook", "%s", msg)
		}
	}
	if c.After < 0 || c.After > MaxAfter {
		add("after", "must be from 0 (every failure) to %d, got %d", MaxAfter, c.After)
	}
	switch {
	case len(c.On) > 0 && len(c.Email) == 0 && c.Webhook == "":
		add("on", "is set, but neither notify.email nor notify.webhook says where to")
	case len(c.On) == 0 && (len(c.Email) > 0 || c.Webhook != ""):
		add("on", "is empty: list the events that notify (failed, fenced, missed, dead)")
	}
	return ps
}

// Report adds the problems of c under key to add, but for those at the keys inherited says
// were inherited (nil: none); hosts and canMail are as for Check.
func (c Config) Report(key string, hosts []string, canMail bool, inherited func(key string) bool, add func(key, msg string)) {
	for _, p := range c.Check(hosts, canMail) {
		top := p.Key
		if i := strings.IndexByte(top, '['); i >= 0 {
			top = top[:i]
		}
		if inherited == nil || !inherited(top) {
			add(key+"."+p.Key, p.Message)
		}
	}
}

// checkWebhook says why u cannot be a notification's webhook, "" when nothing does.
func checkWebhook(u string, hosts []string) string {
	p, err := url.Parse(u)
	switch {
	case err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil:
		return fmt.Sprintf("must be an http or https URL with a host and no user info, got %q", u)
	case !slices.ContainsFunc(hosts, func(h string) bool { return strings.EqualFold(h, p.Hostname()) }):
		return fmt.Sprintf("host %q is not in outbox.webhook.hosts, so its notifications would be refused", p.Hostname())
	case len(u) > 2048:
		return "must be at most 2048 bytes"
	}
	return ""
}

// Policy returns the notifications c configures for job.
func (c Config) Policy(job string) Policy {
	on := make([]Event, len(c.On))
	for i, ev := range c.On {
		on[i] = Event(ev)
	}
	return Policy{Job: job, On: on, Email: slices.Clone(c.Email), Webhook: c.Webhook, After: c.After}
}
