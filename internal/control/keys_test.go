package control

import (
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestNew(t *testing.T) {
	cli := &clientv3.Client{} // never used: New only validates
	for _, tc := range []struct {
		prefix string
		ok     bool
	}{
		{"/scheduler/election", true},
		{"/a", true},
		{"", false},
		{"/", false},
		{"scheduler/election", false},
		{"/scheduler/election/", false},
	} {
		_, err := New(cli, tc.prefix)
		switch {
		case tc.ok && err != nil:
			t.Errorf("New(%q) = %v, want no error", tc.prefix, err)
		case !tc.ok && !errors.Is(err, ErrInvalidPrefix):
			t.Errorf("New(%q) = %v, want ErrInvalidPrefix", tc.prefix, err)
		}
	}
	if _, err := New(nil, "/a"); err == nil {
		t.Errorf("New(nil client) succeeded")
	}
}

func TestCheckJob(t *testing.T) {
	for _, tc := range []struct {
		job  string
		ok   bool
		says string
	}{
		{"invoices", true, ""},
		{"a_b-9", true, ""},
		{"", false, "empty"},
		{"a/b", false, "must not contain /"},
		{"/", false, "must not contain /"},
		{"Invoices", false, "[a-z0-9_-]+"},
		{"a b", false, "[a-z0-9_-]+"},
		{"a:b", false, "[a-z0-9_-]+"},
		{"a\n", false, "[a-z0-9_-]+"},
		{strings.Repeat("a", MaxJobName), true, ""},
		{strings.Repeat("a", MaxJobName+1), false, "129 bytes long, more than the limit of 128"},
	} {
		err := checkJob(tc.job)
		switch {
		case tc.ok && err != nil:
			t.Errorf("checkJob(%q) = %v, want nil", tc.job, err)
		case !tc.ok && (!errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), tc.says)):
			t.Errorf("checkJob(%q) = %v, want ErrInvalidJob saying %q", tc.job, err, tc.says)
		}
	}
}

func TestCheckNode(t *testing.T) {
	for _, tc := range []struct {
		node string
		ok   bool
	}{
		{"node-1", true},
		{"Host.example.com", true},
		{"", false},
		{"a/b", false},
		{"a b", false},
		{"a\tb", false},
		{"a\x7f", false},
		{"a\x01b", false},
		{strings.Repeat("n", MaxNodeName), true},
		{strings.Repeat("n", MaxNodeName+1), false},
	} {
		err := checkNode(tc.node)
		switch {
		case tc.ok && err != nil:
			t.Errorf("checkNode(%q) = %v, want nil", tc.node, err)
		case !tc.ok && !errors.Is(err, ErrInvalidNode):
			t.Errorf("checkNode(%q) = %v, want ErrInvalidNode", tc.node, err)
		}
	}
}

func TestKeys_Layout(t *testing.T) {
	k := keys{prefix: "/s/e"}
	at := time.Date(2026, 3, 29, 1, 2, 3, 4000, time.UTC)
	for _, tc := range []struct{ got, want string }{
		{k.paused("inv"), "/s/e:paused/inv"},
		{k.trigger("inv", at), "/s/e:trigger/inv/2026-03-29T01:02:03.000004Z"},
		{k.replica("n1"), "/s/e:replica/n1"},
		{k.electionKey(0x694d9a1b2c), "/s/e/694d9a1b2c"},
	} {
		if tc.got != tc.want {
			t.Errorf("key = %q, want %q", tc.got, tc.want)
		}
		if strings.HasPrefix(tc.got, k.election()) != (tc.want == "/s/e/694d9a1b2c") {
			t.Errorf("key %q: inside the election range %q is wrong", tc.got, k.election())
		}
	}
}

func TestKeys_TriggerSortsByTime(t *testing.T) {
	k := keys{prefix: "/p"}
	// Fixed width: a later time sorts later even when a field gains a digit
	// or the fraction is zero.
	times := []time.Time{
		time.Date(999, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 1000, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 9, 999999000, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC),
	}
	for i := 1; i < len(times); i++ {
		a, b := k.trigger("j", times[i-1]), k.trigger("j", times[i])
		if a >= b {
			t.Errorf("key %q sorts at or after %q", a, b)
		}
	}
}

func TestKeys_ParseTrigger(t *testing.T) {
	k := keys{prefix: "/p"}
	at := time.Date(2026, 10, 25, 2, 30, 0, 123456000, time.UTC)
	job, got, err := k.parseTrigger(k.trigger("stock", at))
	if err != nil || job != "stock" || !got.Equal(at) || got.Location() != time.UTC {
		t.Fatalf("parse own key = %q %v %v, want stock %v", job, got, err, at)
	}
	for _, bad := range []string{
		"/q:trigger/stock/2026-10-25T02:30:00.123456Z", // other prefix
		"/p:trigger/stock", // no time
		"/p:trigger/Stock/2026-10-25T02:30:00.123456Z",      // bad job
		"/p:trigger/stock/2026-10-25T02:30:00Z",             // not fixed width
		"/p:trigger/stock/2026-10-25T02:30:00.123456+01:00", // not UTC
		"/p:trigger/stock/now",
		"/p:trigger/stock/2026-10-25T02:30:00.123456Z/x",
	} {
		if _, _, err := k.parseTrigger(bad); err == nil {
			t.Errorf("parseTrigger(%q) succeeded", bad)
		}
	}
}

func TestRetryDelay(t *testing.T) {
	want := []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		if got := retryDelay(i + 1); got != w {
			t.Errorf("retryDelay(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := retryDelay(1000); got != 5*time.Second {
		t.Errorf("retryDelay(1000) = %v, want 5s", got)
	}
}
