package config

import (
	"reflect"
	"strings"
	"testing"

	"scheduler/cmd/scheduler/internal/config/configtest"

	"scheduler"
)

const notifyOutbox = "outbox: {log: true, webhook: {hosts: [hooks.example.test]}}\n"

// TestLoad_Notify: the notify keys, under defaults and per job, are checked at load with their
// key paths; an inherited bad value is reported once, under defaults.notify.
func TestLoad_Notify(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string // substrings of the error; none: loads
	}{
		{"Valid", notifyOutbox + `defaults:
  notify: {on: [failed, missed], email: [ops@example.test], after: 3}
jobs:
  - {name: a, schedule: "@hourly", type: exec, command: [/bin/false], notify: {on: [fenced, dead], webhook: "https://hooks.example.test/n"}}
`, nil},
		{"BadEvent", notifyOutbox + `jobs:
  - {name: a, schedule: "@hourly", type: exec, command: [/bin/false], notify: {on: [failed, crashed], email: [ops@example.test]}}
`, []string{`jobs[0].notify.on[1]: must be one of failed, fenced, missed, dead; got "crashed"`}},
		{"BadAddress", notifyOutbox + `jobs:
  - {name: a, schedule: "@hourly", type: exec, command: [/bin/false], notify: {on: [failed], email: ["Ops <ops@example.test>", "nobody"]}}
`, []string{`jobs[0].notify.email[0]: must be one e-mail address, got "Ops <ops@example.test>"`, `jobs[0].notify.email[1]: must be one e-mail address`}},
		{"WebhookHostNotAllowed", notifyOutbox + `jobs:
  - {name: a, schedule: "@hourly", type: exec, command: [/bin/false], notify: {on: [failed], webhook: "http://127.0.0.1:9/x"}}
`, []string{`jobs[0].notify.webhook: host "127.0.0.1" is not in outbox.webhook.hosts`}},
		{"WebhookNotHTTP", notifyOutbox + `jobs:
  - {name: a, schedule: "@hourly", type: exec, command: [/bin/false], notify: {on: [failed], webhook: "ftp://hooks.example.test/x"}}
`, []string{`jobs[0].notify.webhook: must be an http or https URL`}},
		{"EmailWithoutDeliverer", configtest.MinimalJob + `    notify: {on: [failed], email: [ops@example.test]}
`, []string{`jobs[0].notify.email: notifies by e-mail, but no deliverer is configured: set outbox.smtp.addr, or outbox.log: true`}},
		{"NoDestination", notifyOutbox + configtest.MinimalJob + `    notify: {on: [failed]}
`, []string{`jobs[0].notify.on: is set, but neither notify.email nor notify.webhook says where to`}},
		{"NoEvents", notifyOutbox + configtest.MinimalJob + `    notify: {email: [ops@example.test]}
`, []string{`jobs[0].notify.on: is empty`}},
		{"BadAfter", notifyOutbox + configtest.MinimalJob + `    notify: {on: [failed], email: [ops@example.test], after: -1}
`, []string{`jobs[0].notify.after: must be from 0 (every failure) to 1000, got -1`}},
		{"InheritedReportedOnce", notifyOutbox + `defaults:
  notify: {on: [failed], email: [nobody]}
jobs:
  - {name: a, schedule: "@hourly", type: exec, command: [/bin/false]}
  - {name: b, schedule: "@hourly", type: exec, command: [/bin/false]}
`, []string{`defaults.notify.email[0]: must be one e-mail address, got "nobody"`}},
		{"UnknownKey", notifyOutbox + configtest.MinimalJob + `    notify: {on: [failed], email: [ops@example.test], to: x}
`, []string{`jobs[0].notify`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := loadWant(t, configtest.Write(t, tc.body), nil, tc.want...)
			if tc.name == "InheritedReportedOnce" && strings.Contains(err.Error(), "jobs[") {
				t.Errorf("an inherited value reported under a job:\n%v", err)
			}
		})
	}
}

// TestLoad_NotifyInherited: a job's notify keys come from defaults.notify key by key, the
// environment sets the lists comma-separated, and the table's jobs carry the notifications.
func TestLoad_NotifyInherited(t *testing.T) {
	cfg, err := LoadTable(configtest.Write(t, notifyOutbox+`defaults:
  notify: {on: [failed], after: 2}
jobs:
  - {name: a, schedule: "@hourly", type: exec, command: [/bin/false], notify: {webhook: "https://hooks.example.test/n"}}
  - {name: b, schedule: "@hourly", type: exec, command: [/bin/false], notify: {on: [missed], after: 0}}
  - {name: c, schedule: "@hourly", type: exec, command: [/bin/false]}
`), []string{"SCHEDULER_DEFAULTS_NOTIFY_EMAIL=ops@example.test, dev@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Config.Jobs[0].Notify, cfg.Config.Jobs[1].Notify
	if !reflect.DeepEqual(a.On, []string{"failed"}) || a.After != 2 || a.Webhook == "" || !reflect.DeepEqual(a.Email, []string{"ops@example.test", "dev@example.test"}) {
		t.Errorf("job a notify = %+v", a)
	}
	if !reflect.DeepEqual(b.On, []string{"missed"}) || b.After != 0 || len(b.Email) != 2 {
		t.Errorf("job b notify = %+v", b)
	}
	for _, s := range cfg.Table {
		if s.Notify == nil {
			t.Fatalf("job %s of the table has no notifications", s.Name)
		}
	}
	n := cfg.Table[0].Notify(scheduler.Run{Job: "a", Status: scheduler.StatusFailed})
	if n == nil || len(n.Messages) != 3 || n.After != 2 {
		t.Fatalf("job a's notice = %+v, want 2 e-mails and a webhook after 2 failures", n)
	}
}
